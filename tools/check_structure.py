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
    use any other name;
  - includes in the same layers: a file of a family (its .c and .h files) includes no header of a family
    after its own, and a public header (include/attncap/) none of a family after the header's. A public
    header's family is that of its NAME.c (else the family named NAME, else that of its NAME_*.c, else
    HEADER_FAMILY's); one it cannot place is reported;
  - line budgets: a command file (src/cli/cmd_*.c) at most CMD_LINES lines, any other file of src/ and
    include/ at most FILE_LINES unless LONG_FILES gives it a reason;
  - the library reads the environment (getenv, secure_getenv, environ) only in src/base/ (the CLI, the
    program, may);
  - the program (src/cli/) is over the stable core alone (issue #31 part 5): it includes no header of
    include/attncap/ but attncap.h, and its objects (BUILD/src/cli/*.o) call no ac_ function that
    src/libattncap.map does not export.
Prints what it finds; exits 1 if any rule is broken."""
import glob, os, re, subprocess, sys

# The order of docs/architecture.md's table: each family may call the ones before it, never after.
FAMILIES = ['base', 'formats', 'image', 'cnn', 'encoder', 'detect', 'data', 'decoder', 'search', 'model', 'naming', 'captioner',
            'overlay', 'eval', 'train', 'api']
# Public headers no source file's name places (see include_breaches). attncap.h, the stable core, is
# self-contained (it includes no other attncap header: as base's, the rule holds it to that) and holds
# the types every family shares (ac_err, the version) beside the core's functions (src/api/).
HEADER_FAMILY = {'attncap': 'base', 'version': 'base'}
CMD_LINES, FILE_LINES = 300, 800
# Files allowed over FILE_LINES, each with its reason ('src/x/y.c': "why it is one file"). None now.
LONG_FILES = {}

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

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

def header_families(root):
    """attncap/NAME.h -> its family (None when it cannot be placed); src/FAMILY/x.h -> FAMILY."""
    by_name = {}
    for p in glob.glob(f'{root}/src/*/*.c'):
        by_name.setdefault(os.path.basename(p)[:-2], set()).add(p.split(os.sep)[-2])
    out = {}
    for h in glob.glob(f'{root}/include/attncap/*.h'):
        n = os.path.basename(h)[:-2]
        fams = by_name.get(n) or ({n} if n in FAMILIES else None) or \
            {f for k, v in by_name.items() if k.startswith(n + '_') for f in v} or \
            ({HEADER_FAMILY[n]} if n in HEADER_FAMILY else set())
        fams = {f for f in fams if f in FAMILIES}
        out['attncap/' + n + '.h'] = min(fams, key=FAMILIES.index) if fams else None
    for h in glob.glob(f'{root}/src/*/*.h'):
        out[os.path.relpath(h, root)] = h.split(os.sep)[-2]
    return out

def include_breaches(root):
    fam = header_families(root)
    out = [f'include/{h}: no family (name it after a source file, or add it to HEADER_FAMILY)'
           for h, f in sorted(fam.items()) if f is None]
    private = {os.path.basename(h): h for h in fam if h.startswith('src/')}
    files = [(p, p.split(os.sep)[-2]) for p in glob.glob(f'{root}/src/*/*.[ch]')] + \
            [(p, fam['attncap/' + os.path.basename(p)]) for p in glob.glob(f'{root}/include/attncap/*.h')]
    for p, fa in sorted(files):
        if fa not in FAMILIES: continue  # src/cli/ (the program) and headers without a family
        rel = os.path.relpath(p, root)
        for inc in INCLUDE_RE.findall(open(p, errors='replace').read()):
            h = inc if inc.startswith('attncap/') else private.get(os.path.basename(inc))
            fb = fam.get(h)
            if fb in FAMILIES and FAMILIES.index(fb) > FAMILIES.index(fa):
                out.append(f'{rel} ({fa}) includes {inc} ({fb}), a family after its own')
    return out

def line_budgets(root):
    out = []
    for p in sorted(glob.glob(f'{root}/src/**/*.[ch]', recursive=True) + glob.glob(f'{root}/include/**/*.h', recursive=True)):
        rel = os.path.relpath(p, root)
        n = sum(1 for _ in open(p, errors='replace'))
        cmd = re.fullmatch(r'src/cli/cmd_\w+\.c', rel)
        limit = CMD_LINES if cmd else FILE_LINES
        if n > limit and (cmd or rel not in LONG_FILES):
            out.append(f'{rel}: {n} lines, over {limit}' + ('' if cmd else ' (LONG_FILES lists the exceptions)'))
    for rel in sorted(LONG_FILES):
        if not os.path.exists(os.path.join(root, rel)):
            out.append(f'{rel}: in LONG_FILES but gone (remove it there)')
    return out

ENV_RE = re.compile(r'\b(?:secure_getenv|getenv|environ)\b')

def env_reads(root):
    out = []
    for p in sorted(glob.glob(f'{root}/src/*/*.[ch]') + glob.glob(f'{root}/src/*.[ch]')):
        rel = os.path.relpath(p, root)
        if rel.startswith(('src/base/', 'src/cli/')): continue
        text = re.sub(r'/\*.*?\*/|//[^\n]*', lambda m: '\n' * m.group(0).count('\n'), open(p, errors='replace').read(), flags=re.S)
        for i, line in enumerate(text.split('\n'), 1):
            if ENV_RE.search(line): out.append(f'{rel}:{i}: reads the environment (only src/base/ may: locate.h ac_env)')
    return out

def program_breaches(root, build):
    out = []
    for p in sorted(glob.glob(f'{root}/src/cli/*.[ch]')):
        for i, line in enumerate(open(p, errors='replace').read().split('\n'), 1):
            m = re.match(r'\s*#\s*include\s+[<"]attncap/([^">]+)[">]', line)
            if m and m.group(1) != 'attncap.h':
                out.append(f'{os.path.relpath(p, root)}:{i}: includes attncap/{m.group(1)} (the program uses attncap.h alone)')
    mp = f'{root}/src/libattncap.map'
    core = set(re.findall(r'^\s*(ac_[a-z0-9_]+);', open(mp).read(), re.M)) if os.path.exists(mp) else set()
    for o in sorted(glob.glob(f'{build}/src/cli/*.o')):
        src = f'{root}/src/cli/' + os.path.basename(o)[:-2] + '.c'
        if not os.path.exists(src): continue  # an object of a file since moved
        for line in nm(o):
            parts = line.split()
            if len(parts) == 2 and parts[0] == 'U' and parts[1].startswith('ac_') and parts[1] not in core:
                out.append(f'src/cli/{os.path.basename(src)}: calls {parts[1]}, not in the core (src/libattncap.map)')
    return out

root, build = sys.argv[1], sys.argv[2]
bad = 0
inc = include_cycles(root)
circles, calls = file_circles(build)
layers = family_breaches(root, calls)
foreign = foreign_symbols(build)
incl = include_breaches(root)
budgets = line_budgets(root)
env = env_reads(root)
program = program_breaches(root, build)
for c in inc: print('include cycle:', c)
for c in circles: print('circle between files:', c)
for c in layers: print('family layering:', c)
for s in foreign: print('exported without ac_:', s)
for c in incl: print('include layering:', c)
for c in budgets: print('line budget:', c)
for c in env: print('environment:', c)
for c in program: print('program:', c)
print(f'{len(inc)} include cycles, {len(circles)} circles over {len(calls)} files, {len(layers)} calls against the '
      f'family layers, {len(foreign)} exported names without ac_, {len(incl)} includes against the family layers, '
      f'{len(budgets)} files over their line budget, {len(env)} environment reads outside src/base/, '
      f'{len(program)} uses of the library outside the core by the program')
sys.exit(1 if inc or circles or layers or foreign or incl or budgets or env or program else 0)
