#!/usr/bin/env python3
"""tools/check_structure.py ROOT BUILD: the layering rules of CONTRIBUTING.md, checked.
  - no cycle in the #include graph of include/attncap/*.h, src/*.h and src/cli/*.h;
  - no circle between library source files (A calls a function defined in B and B one defined in A,
    from nm over BUILD/src/*.o);
  - every symbol the library exports starts with ac_ (BUILD/libattncap.a): a program linking it may
    use any other name.
Prints what it finds; exits 1 if any rule is broken."""
import glob, os, re, subprocess, sys

def include_cycles(root):
    files = glob.glob(f'{root}/include/attncap/*.h') + glob.glob(f'{root}/src/*.h') + glob.glob(f'{root}/src/cli/*.h')
    def key(p):
        rel = os.path.relpath(p, root)
        return 'attncap/' + os.path.basename(p) if rel.startswith('include/') else rel
    nodes = {key(p): p for p in files}
    def resolve(src, inc):
        if inc.startswith('attncap/'): return inc if inc in nodes else None
        cand = os.path.join(os.path.dirname(os.path.relpath(nodes[src], root)), inc)
        return cand if cand in nodes else None
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
    defs, uses = {}, {}
    for o in sorted(glob.glob(f'{build}/src/*.o')):
        f = os.path.basename(o)[:-2]
        uses[f] = set()
        for line in nm(o):
            parts = line.split()
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
    return out, len(g)

def foreign_symbols(build):
    names = set()
    for line in nm(f'{build}/libattncap.a'):
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TDBRVW' and not parts[2].startswith('ac_'): names.add(parts[2])
    return sorted(names)

root, build = sys.argv[1], sys.argv[2]
bad = 0
inc = include_cycles(root)
circles, n_files = file_circles(build)
foreign = foreign_symbols(build)
for c in inc: print('include cycle:', c)
for c in circles: print('circle between files:', c)
for s in foreign: print('exported without ac_:', s)
print(f'{len(inc)} include cycles, {len(circles)} circles over {n_files} files, {len(foreign)} exported names without ac_')
sys.exit(1 if inc or circles or foreign else 0)
