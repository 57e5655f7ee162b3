#!/usr/bin/env python3
"""Import circles in a Rust module tree.

Reads which file of src/<room>/ uses which (`use` lines and inline paths that start with
crate::<room>, super or self, or with a name a `use` brought in), follows `mod.rs`
re-imports and `pub use` re-exports to the file that defines the item, and prints the
strongly connected components of more than one file: files that all import each other,
directly or around a circle. Test modules (`#[cfg(test)] mod tests`) are left out.

    python3 .ci/import_circles.py src testing          # the circles
    python3 .ci/import_circles.py src testing -v       # and every file, leaves first
    python3 .ci/import_circles.py src testing -e       # and every file's imports
    python3 .ci/import_circles.py src testing 'a/b->c/d'  # as if a/b did not use c/d

A reading aid, not a compiler: a path it cannot resolve counts as no edge.
"""
import os, re, sys
from collections import defaultdict

src, root = sys.argv[1], sys.argv[2]
base = os.path.join(src, root)

def modpath_of(path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] == 'mod': rel = rel[:-1]
    return tuple(rel)

files = {}
for d, _, fs in os.walk(base):
    for f in fs:
        if f.endswith('.rs'):
            p = os.path.join(d, f); files[modpath_of(p)] = p

def strip(text):
    text = re.sub(r'//[^\n]*', '', text)
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    # test modules are not part of the design's dependencies
    m = re.search(r'#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+tests\s*\{', text)
    if m: text = text[:m.start()]
    return text

def expand(tree):
    """'a::{b, c::{d, e}}' -> ['a::b', 'a::c::d', 'a::c::e']"""
    tree = re.sub(r'\s+as\s+', '@', tree)
    tree = re.sub(r'\s+', '', tree)
    i = tree.find('{')
    if i < 0: return [tree]
    prefix, inner = tree[:i], tree[i+1:tree.rfind('}')]
    parts, depth, cur = [], 0, ''
    for ch in inner:
        if ch == ',' and depth == 0: parts.append(cur); cur = ''; continue
        depth += ch == '{'; depth -= ch == '}'; cur += ch
    if cur: parts.append(cur)
    out = []
    for p in parts:
        for e in expand(p): out.append(prefix + e)
    return out

texts = {m: strip(open(p).read()) for m, p in files.items()}
uses = {}   # module -> list of paths (segments), raw
aliases = {}  # module -> {name: abs path}
for m, t in texts.items():
    paths = []
    for st in re.findall(r'\buse\s+([^;]+);', t):
        for e in expand(st):
            paths.append(e)
    for p in re.findall(r'\b(?:crate|super|self)(?:::\w+)+', re.sub(r'\buse\s+[^;]+;', '', t)):
        paths.append(p)
    uses[m] = paths

def absolute(m, path):
    segs = path.split('::')
    cur = list(m)
    if segs[0] == 'crate': cur = []; segs = segs[1:]
    elif segs[0] == 'self': segs = segs[1:]
    elif segs[0] == 'super':
        while segs and segs[0] == 'super': cur = cur[:-1]; segs = segs[1:]
    elif tuple(cur + [segs[0]]) in files:
        pass  # a child module, named relatively
    else:
        return None  # extern crate or local name
    return cur + segs

# aliases: `use X::name;` in a module makes `module::name` mean X::name
for m, paths in uses.items():
    al = {}
    for p in paths:
        p, _, rename = p.partition('@')
        a = absolute(m, p)
        if not a or a[-1] == '*': continue
        if a[-1] == 'self': a = a[:-1]
        al[rename or a[-1]] = a
    aliases[m] = al

def resolve(segs, depth=0):
    """the longest module file prefix of an absolute path, following aliases"""
    if depth > 20: return None
    cur = []
    for i, s in enumerate(segs):
        if tuple(cur + [s]) in files:
            cur = cur + [s]; continue
        al = aliases.get(tuple(cur), {})
        if s in al and tuple(cur) in files:
            return resolve(al[s] + segs[i+1:], depth + 1)
        break
    return tuple(cur) if tuple(cur) in files else None

# inline paths through a local name: `use super::storage;` then `storage::store::Store`
for m, t in texts.items():
    body = re.sub(r'\buse\s+[^;]+;', '', t)
    for first, rest in re.findall(r'(?<![\w:])(\w+)((?:::\w+)+)', body):
        if first in aliases[m] and first not in ('crate', 'super', 'self'):
            uses[m].append('crate::' + '::'.join(aliases[m][first]) + rest)

edges = defaultdict(set)
for m, paths in uses.items():
    for p in paths:
        a = absolute(m, p.partition('@')[0])
        if not a or a[:1] != [root]: continue
        if a[-1] == '*': a = a[:-1]
        t = resolve(a)
        if t and t != m:
            edges[m].add(t)

# a mod.rs whose only content is declarations and re-imports is not a node of its own:
# edges into it were resolved through its aliases; drop what remains (its `mod` lines)
def name(m): return '/'.join(m[1:]) or 'mod'

# a mod.rs that holds only `mod` and `use` lines is no node of its own: paths through it
# were followed to the files its names stand for
for m, t in texts.items():
    if files[m].endswith('mod.rs') and not re.sub(r'(pub(\([^)]*\))?\s+)?(mod\s+\w+|use\s+[^;]+);|#\[[^\]]*\]', '', t).strip():
        edges.pop(m, None)
        for v in edges: edges[v].discard(m)
        del files[m]

# what-if: --drop a->b (or *->b) removes edges before the components are found
for arg in sys.argv:
    if '->' in arg and arg != '->':
        a, b = arg.split('->')
        for v in list(edges):
            if a in ('*', name(v)):
                edges[v] = {w for w in edges[v] if name(w) != b}

# Tarjan
idx, low, on, st, sccs, n = {}, {}, set(), [], [], [0]
sys.setrecursionlimit(10000)
def strong(v):
    idx[v] = low[v] = n[0]; n[0] += 1; st.append(v); on.add(v)
    for w in edges[v]:
        if w not in idx: strong(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        c = []
        while True:
            w = st.pop(); on.discard(w); c.append(w)
            if w == v: break
        sccs.append(c)
for v in sorted(files):
    if v not in idx: strong(v)
big = [c for c in sccs if len(c) > 1]
print(f'{len(files)} files, {sum(len(e) for e in edges.values())} edges')
for c in sorted(big, key=len, reverse=True):
    print(f'circle of {len(c)}: ' + ' '.join(sorted(name(x) for x in c)))
if '-v' in sys.argv:
    # sccs come out in reverse topological order: leaves first
    for c in sccs:
        if len(c) == 1:
            v = c[0]; print(f'{name(v)}  <- uses: ' + ' '.join(sorted(name(w) for w in edges[v])))
        else:
            print('CIRCLE ' + ' '.join(sorted(name(x) for x in c)))
if '-e' in sys.argv:
    for v in sorted(files):
        print(name(v), '->', ' '.join(sorted(name(w) for w in edges[v])))
