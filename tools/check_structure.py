#!/usr/bin/env python3
"""tools/check_structure.py ROOT BUILD: the layering rules of CONTRIBUTING.md, checked.
  - no cycle in the #include graph of include/attncap/*.h and the headers of src/ (its family folders,
    src/cli/ and any header still flat in src/); a library header's bare "name.h" is looked up in its
    own folder, then in src/ and every family folder, as the Makefile's include path does;
  - no circle between library source files (A calls a function defined in B and B one defined in A,
    from nm over the members of BUILD/libattncap.a, so objects of files since moved or deleted do
    not count);
  - the families (src/FAMILY/) in layers: a file calls only into its own family and the ones listed
    before it in FAMILIES (a file still flat in src/ is not checked);
  - every symbol the library exports starts with ac_ (BUILD/libattncap.a): a program linking it may
    use any other name.
Prints what it finds; exits 1 if any rule is broken."""
import glob, os, re, subprocess, sys

# The order of docs/architecture.md's table: each family may call the ones before it, never after.
FAMILIES = ['base', 'formats', 'image', 'cnn', 'encoder', 'detect', 'data', 'decoder', 'search', 'model', 'captioner',
            'overlay', 'eval', 'train', 'api']

def include_cycles(root):
    files = glob.glob(f'{root}/include/attncap/*.h') + glob.glob(f'{root}/src/*.h') + glob.glob(f'{root}/src/*/*.h')
    def key(p):
        rel = os.path.relpath(p, root)
        return 'attncap/' + os.path.basename(p) if rel.startswith('include/') else rel
    nodes = {key(p): p for p in files}
    lib_dirs = ['src'] + sorted(d for d in {os.path.dirname(k) for k in nodes} if d.startswith('src/') and d != 'src/cli')
    def resolve(src, inc):
        if inc.startswith('attncap/'): return inc if inc in nodes else None
        here = os.path.dirname(src)
        for d in [here] + (lib_dirs if here in lib_dirs else []):
            cand = os.path.normpath(os.path.join(d, inc))
            if cand in nodes: return cand
        return None
    g = {k: [r for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', open(p).read(), re.M) if (r := resolve(k, inc))]
         for k, p in nodes.items()}
    cycles, state, stack = set(), {}, []
    def dfs(u):
        state[u] = 1; stack.append(u)
        for v in g[u]:
            if state.get(v) == 1: cycles.add(tuple(stack[stack.index(v):]))
            elif v not in state: dfs(v)
        stack.pop(); state[u] = 2
    for u in sorted(g):
        if u not in state: dfs(u)
    return [' -> '.join(c + (c[0],)) for c in sorted(cycles)]

def nm(path):
    return subprocess.run(['nm', path], capture_output=True, text=True).stdout.splitlines()

def file_circles(build):
    defs, uses, f = {}, {}, None
    for line in nm(f'{build}/libattncap.a'):  # "member.o:" then that member's symbols
        if line.endswith('.o:'):
            f = line[:-3]; uses[f] = set(); continue
        parts = line.split()
        if f is None: continue
        if len(parts) == 3 and parts[1] in 'TDBR': defs[parts[2]] = f
        elif len(parts) == 2 and parts[0] == 'U': uses[f].add(parts[1])
    g = {f: sorted({defs[s] for s in u if s in defs and defs[s] != f}) for f, u in uses.items()}
    idx, low, on, st, out, n = {}, {}, set(), [], [], [0]
    def scc(v):  # Tarjan: each strongly connected group of more than one file is a circle
        idx[v] = low[v] = n[0]; n[0] += 1; st.append(v); on.add(v)
        for w in g[v]:
            if w not in idx: scc(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = st.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(' '.join(sorted(comp)))
    for v in sorted(g):
        if v not in idx: scc(v)
    return out, g

def family_breaches(root, g):
    family = {os.path.basename(p)[:-2]: p.split(os.sep)[-2] for p in glob.glob(f'{root}/src/*/*.c')}
    out = []
    for a in sorted(g):
        fa = family.get(a)
        if fa is None or fa == 'cli': continue
        if fa not in FAMILIES:
            out.append(f'src/{fa}/ is not in FAMILIES (tools/check_structure.py)'); continue
        for b in g[a]:
            fb = family.get(b)
            if fb in FAMILIES and FAMILIES.index(fb) > FAMILIES.index(fa):
                out.append(f'{a} ({fa}) calls {b} ({fb}), a family after its own')
    return sorted(set(out))

def foreign_symbols(build):
    names = set()
    for line in nm(f'{build}/libattncap.a'):
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TDBRVW' and not parts[2].startswith('ac_'): names.add(parts[2])
    return sorted(names)

root, build = sys.argv[1], sys.argv[2]
bad = 0
inc = include_cycles(root)
circles, calls = file_circles(build)
layers = family_breaches(root, calls)
foreign = foreign_symbols(build)
for c in inc: print('include cycle:', c)
for c in circles: print('circle between files:', c)
for c in layers: print('family layering:', c)
for s in foreign: print('exported without ac_:', s)
print(f'{len(inc)} include cycles, {len(circles)} circles over {len(calls)} files, {len(layers)} calls against the '
      f'family layers, {len(foreign)} exported names without ac_')
sys.exit(1 if inc or circles or layers or foreign else 0)
