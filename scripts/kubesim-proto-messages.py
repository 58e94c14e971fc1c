#!/usr/bin/env python3
"""Writes the protobuf message table of kubesim's request-body decoder (crates/kubesim/src/server/proto/):
every message reachable from the kinds the decoder accepts, with, for each field, its number,
its JSON name, whether it is omitempty or inline, how the Go struct holds it (value, pointer,
slice, map) and its element type.

Field numbers and protobuf types come from each package's generated.proto; JSON names,
`omitempty`, `,inline` and the pointer/slice/map shapes from the Go struct definitions. Where
both say something (the number in the Go `protobuf:` tag, slice vs `repeated`, map vs `map<>`,
the scalar type) the script checks that they agree.

Usage: check out k8s.io/api and k8s.io/apimachinery at the tag of the Kubernetes version
kubesim reports (v0.33.0 for 1.33; update K8S_VERSION below with it), then

    scripts/kubesim-proto-messages.py API APIMACHINERY > crates/kubesim/src/server/proto/messages.rs

`--compare-with FILE` instead prints, to stdout, how the table derived here differs from the
hand-written string table `MESSAGES` it replaced (FILE: `git show 7f83a73:crates/kubesim/src/proto.rs`,
the last version that held it; at v0.32.0 the two are identical).

The parsers read the Go and proto files line by line (the API packages follow one layout),
not Go or protobuf in general.
"""
import os
import re
import sys

K8S_VERSION = 'v0.33.0'

# Mirrors GROUP_VERSIONS and ROOTS in crates/kubesim/src/server/proto/mod.rs: apiVersion -> table prefix,
# and the kinds a request body may carry. `meta.DeleteOptions` is accepted in every group.
GROUP_VERSIONS = {
    'v1': 'core',
    'apps/v1': 'apps',
    'batch/v1': 'batch',
    'rbac.authorization.k8s.io/v1': 'rbac',
    'networking.k8s.io/v1': 'net',
    'policy/v1': 'policy',
    'scheduling.k8s.io/v1': 'sched',
    'authentication.k8s.io/v1': 'authn',
    'authorization.k8s.io/v1': 'authz',
    'autoscaling/v1': 'autoscaling',
    'certificates.k8s.io/v1': 'certs',
    'coordination.k8s.io/v1': 'coord',
}
ROOTS = [
    'core.Binding', 'core.ConfigMap', 'core.Endpoints', 'core.LimitRange', 'core.Namespace',
    'core.PersistentVolumeClaim', 'core.Pod', 'core.PodTemplate', 'core.ReplicationController',
    'core.ResourceQuota', 'core.Secret', 'core.Service', 'core.ServiceAccount',
    'apps.DaemonSet', 'apps.Deployment', 'apps.ReplicaSet', 'apps.StatefulSet',
    'batch.CronJob', 'batch.Job',
    'rbac.ClusterRole', 'rbac.ClusterRoleBinding', 'rbac.Role', 'rbac.RoleBinding',
    'net.Ingress', 'net.IngressClass', 'net.NetworkPolicy',
    'policy.Eviction', 'policy.PodDisruptionBudget',
    'sched.PriorityClass',
    'authn.SelfSubjectReview', 'authn.TokenRequest', 'authn.TokenReview',
    'authz.SelfSubjectAccessReview', 'authz.SelfSubjectRulesReview', 'authz.SubjectAccessReview',
    'autoscaling.HorizontalPodAutoscaler', 'autoscaling.Scale',
    'certs.CertificateSigningRequest',
    'coord.Lease',
    'meta.DeleteOptions',
]

META = 'k8s.io/apimachinery/pkg/apis/meta/v1'
RESOURCE = 'k8s.io/apimachinery/pkg/api/resource'
INTSTR = 'k8s.io/apimachinery/pkg/util/intstr'
# Go types with a JSON form of their own (a MarshalJSON method): the decoder knows each one's
# wire message and JSON rendering, so the walk stops at them. Keyed by Go import path and name.
SPECIALS = {
    (META, 'Time'): 'Time',
    (META, 'MicroTime'): 'MicroTime',
    (META, 'FieldsV1'): 'FieldsV1',
    (RESOURCE, 'Quantity'): 'Quantity',
    (INTSTR, 'IntOrString'): 'IntOrString',
}
# protobuf scalar type -> (table type, the Go scalar it must be).
SCALARS = {'string': ('Str', 'string'), 'bool': ('Bool', 'bool'), 'int32': ('I32', 'int32'),
           'int64': ('I64', 'int64'), 'bytes': ('Bytes', '[]byte')}
GO_PRIMITIVES = {'string', 'bool', 'int', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64',
                 'float32', 'float64', 'byte'}


def fail(msg):
    sys.exit('kubesim-proto-messages: ' + msg)


def group_dir(api_version):
    """k8s.io/api package path of an apiVersion: `networking.k8s.io/v1` -> `networking/v1`."""
    group, _, version = api_version.rpartition('/')
    return (group.split('.')[0] or 'core') + '/' + version


# ---------------------------------------------------------------------------------------------
# Packages: table prefix -> (Go import path, directory).

def packages(api, machinery):
    pkgs = {prefix: ('k8s.io/api/' + group_dir(gv), os.path.join(api, group_dir(gv)))
            for gv, prefix in GROUP_VERSIONS.items()}
    pkgs['meta'] = (META, os.path.join(machinery, 'pkg/apis/meta/v1'))
    for d in (pkgs[p][1] for p in pkgs):
        if not os.path.isfile(os.path.join(d, 'generated.proto')):
            fail(f'no generated.proto in {d}')
    return pkgs


# ---------------------------------------------------------------------------------------------
# generated.proto: message -> {field name: (label, type, number)}.

PROTO_FIELD = re.compile(r'^\s*(optional|repeated)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;')
PROTO_MAP = re.compile(r'^\s*map<\s*string\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;')


def parse_proto(path):
    """(proto package, {message: {field: (label, type, number)}}) of one generated.proto."""
    package, messages, current = None, {}, None
    for line in open(path):
        code = line.split('//', 1)[0].rstrip()
        if not code.strip():
            continue
        m = re.match(r'^package ([\w.]+);', code)
        if m:
            package = m.group(1)
            continue
        m = re.match(r'^message (\w+) \{', code)
        if m:
            current = messages.setdefault(m.group(1), {})
            if code.rstrip().endswith('}'):
                current = None
            continue
        if code == '}':
            current = None
            continue
        if current is None:
            continue
        m = PROTO_FIELD.match(code)
        if m:
            current[m.group(3)] = (m.group(1), m.group(2), int(m.group(4)))
            continue
        m = PROTO_MAP.match(code)
        if m:
            current[m.group(2)] = ('map', m.group(1), int(m.group(3)))
            continue
        fail(f'{path}: cannot read {line.strip()!r}')
    if package is None:
        fail(f'{path}: no package line')
    return package, messages


# ---------------------------------------------------------------------------------------------
# Go: the struct and named types of a package.

GO_FIELD = re.compile(r'^(\w+)\s+([^`]+?)\s+`([^`]*)`')  # Name Type `tags`
GO_EMBEDDED = re.compile(r'^([\w.*]+)\s+`([^`]*)`')  # Type `tags`


def parse_go(d):
    """{name: info} of the type declarations in the package directory d; info is
    dict(kind='struct', fields=[...]) or dict(kind='named', underlying=...), both with the
    file's imports (alias -> path) and the names of the types with a MarshalJSON method."""
    found, marshalers = {}, set()
    for fn in sorted(os.listdir(d)):
        if not fn.endswith('.go') or fn.endswith('_test.go') or 'generated' in fn:
            continue
        src = re.sub(r'/\*.*?\*/', '', open(os.path.join(d, fn)).read(), flags=re.S)
        imports = {}
        for im in re.finditer(r'^\s*(?:import\s+)?(\w+\s+)?"([^"]+)"\s*$', src, re.M):
            alias = im.group(1).strip() if im.group(1) else im.group(2).rsplit('/', 1)[-1]
            imports[alias] = im.group(2)
        for m in re.finditer(r'^func \(\w+ \*?(\w+)\) MarshalJSON\(', src, re.M):
            marshalers.add(m.group(1))
        lines = src.split('\n')
        i = 0
        while i < len(lines):
            line = lines[i]
            m = re.match(r'^type (\w+) struct\s*\{\s*(\}?)\s*$', line)
            if m:
                fields = []
                if not m.group(2):
                    i += 1
                    while not lines[i].startswith('}'):
                        fields.extend(go_field(lines[i].split('//', 1)[0].strip()))
                        i += 1
                found[m.group(1)] = dict(kind='struct', fields=fields, imports=imports)
            else:
                m = re.match(r'^type (\w+) ([^=\s/][^/]*?)\s*(//.*)?$', line)
                if m and not m.group(2).startswith(('interface', 'func')):
                    found[m.group(1)] = dict(kind='named', underlying=m.group(2), imports=imports)
            i += 1
    for name in marshalers & set(found):
        found[name]['marshals_json'] = True
    return found


def go_field(code):
    """The fields of one line of a struct body: [] or [dict(type, json, omit_empty, inline,
    proto_name, proto_num)]."""
    if not code:
        return []
    fm, em = GO_FIELD.match(code), GO_EMBEDDED.match(code)
    if fm:
        ftype, tags = fm.group(2), fm.group(3)
    elif em:
        ftype, tags = em.group(1), em.group(2)
    else:  # untagged: not part of the wire or JSON form
        return []
    json_tag = re.search(r'json:"([^"]*)"', tags)
    json_opts = json_tag.group(1).split(',') if json_tag else ['']
    pb = re.search(r'protobuf:"([^"]*)"', tags)
    pb_opts = pb.group(1).split(',') if pb and pb.group(1) != '-' else []
    pb_name = next((o[5:] for o in pb_opts if o.startswith('name=')), None)
    if pb_opts and pb_name is None and not fm:
        # an embedded struct tagged without a name: generated.proto names it after the type
        base = ftype.lstrip('*').rsplit('.', 1)[-1]
        pb_name = base[0].lower() + base[1:]
    return [dict(type=ftype, json=json_opts[0], omit_empty='omitempty' in json_opts[1:],
                 inline='inline' in json_opts[1:], proto_name=pb_name,
                 proto_num=int(pb_opts[1]) if pb_opts else None)]


def split_map(t):
    """`map[K]V` -> (K, V)."""
    depth = 0
    for j in range(3, len(t)):
        depth += {'[': 1, ']': -1}.get(t[j], 0)
        if depth == 0:
            return t[4:j], t[j + 1:]
    fail(f'bad map type {t}')


# ---------------------------------------------------------------------------------------------
# The walk.

class Table:
    def __init__(self, api, machinery):
        self.pkgs = packages(api, machinery)
        self.roots = {'k8s.io/api/': api, 'k8s.io/apimachinery/': machinery}
        self.go = {}  # Go import path -> what parse_go found there
        self.proto = {}  # proto package -> (prefix, messages)
        self.prefix_of_path = {path: prefix for prefix, (path, _) in self.pkgs.items()}
        for prefix, (_, d) in self.pkgs.items():
            package, messages = parse_proto(os.path.join(d, 'generated.proto'))
            self.proto[package] = (prefix, messages)
        self.proto_package = {prefix: pkg for pkg, (prefix, _) in self.proto.items()}
        self.special_proto = {}  # fully qualified proto message -> special type
        for (path, name), ty in SPECIALS.items():
            info = self.go_types(path).get(name)
            if info is None or not info.get('marshals_json'):
                fail(f'{path}.{name}: expected a type with a MarshalJSON method')
            package, messages = parse_proto(os.path.join(self.dir_of(path), 'generated.proto'))
            if name not in messages:
                fail(f'{path}: generated.proto has no message {name}')
            self.special_proto[package + '.' + name] = ty

    def dir_of(self, path):
        """The checkout directory of a Go import path."""
        for module, root in self.roots.items():
            if path.startswith(module) and os.path.isdir(os.path.join(root, path[len(module):])):
                return os.path.join(root, path[len(module):])
        fail(f'no checkout for Go package {path}')

    def go_types(self, path):
        if path not in self.go:
            self.go[path] = parse_go(self.dir_of(path))
        return self.go[path]

    def resolve(self, path, ident, imports):
        """(import path, name) of a Go type identifier used in package `path`."""
        if '.' in ident:
            alias, name = ident.split('.', 1)
            if alias not in imports:
                fail(f'{path}: unknown import {alias} in {ident}')
            return imports[alias], name
        return path, ident

    def go_shape(self, path, t, imports):
        """(card, element) of a Go field type: card is Value/Ptr/List/Map; element is
        ('scalar', go), ('special', ty), ('struct', path, name) or ('strlist', path, name)."""
        card = 'Value'
        if t.startswith('*'):
            card, t = 'Ptr', t[1:]
        elif t == '[]byte':
            return card, ('scalar', '[]byte')
        elif t.startswith('[]'):
            card, t = 'List', t[2:]
        elif t.startswith('map['):
            key, t = split_map(t)
            card = 'Map'
            if self.leaf(path, key, imports) != ('scalar', 'string'):
                fail(f'{path}: map key {key} is not a string')
        elem = self.leaf(path, t, imports)
        if elem[0] == 'named':  # a named slice or map, e.g. ResourceList, Finalizers
            if card != 'Value':
                if card == 'Map' and elem[3] == '[]string':
                    return card, ('strlist', elem[1], elem[2])  # ExtraValue
                fail(f'{path}: {t} is a {card} of a named composite')
            _, ipath, name, under = elem
            return self.go_shape(ipath, under, self.go_types(ipath)[name]['imports'])
        return card, elem

    def leaf(self, path, t, imports):
        """What a Go type name stands for: ('scalar', go) for a primitive (through named
        scalar types), ('special', ty), ('struct', path, name), or ('named', path, name,
        underlying) for a named slice or map."""
        if t == '[]byte':
            return ('scalar', '[]byte')
        if t in GO_PRIMITIVES:
            return ('scalar', t)
        ipath, name = self.resolve(path, t, imports)
        if (ipath, name) in SPECIALS:
            return ('special', SPECIALS[(ipath, name)])
        info = self.go_types(ipath).get(name)
        if info is None:
            fail(f'{ipath}: no type {name}')
        if info['kind'] == 'struct':
            return ('struct', ipath, name)
        under = info['underlying']
        if under.startswith(('[]', 'map[')) and under != '[]byte':
            return ('named', ipath, name, under)
        return self.leaf(ipath, under, info['imports'])

    def message_name(self, path, name):
        prefix = self.prefix_of_path.get(path)
        if prefix is None:
            fail(f'{path}.{name}: a struct outside the packages of the table')
        return prefix + '.' + name

    def proto_type(self, package, t):
        """Fully qualified proto name of a message type named t in proto package `package`."""
        return t[1:] if t.startswith('.') else package + '.' + t

    def fields(self, message):
        """The table fields of `message` (`prefix.Name`), in Go struct order, and the names
        of the messages they refer to."""
        prefix, name = message.split('.', 1)
        path = self.pkgs[prefix][0]
        package = self.proto_package[prefix]
        info = self.go_types(path).get(name)
        if info is None or info['kind'] != 'struct':
            fail(f'{message}: no Go struct')
        pfields = self.proto[package][1].get(name)
        if pfields is None:
            fail(f'{message}: not in {package} generated.proto')
        out, refs, matched = [], [], set()
        for f in info['fields']:
            if f['proto_name'] is None:
                if f['json'] != '-' and not (f['inline'] and f['type'].endswith('TypeMeta')):
                    fail(f'{message}: Go field of type {f["type"]} has no protobuf tag')
                continue
            pf = pfields.get(f['proto_name'])
            if pf is None:
                fail(f'{message}.{f["proto_name"]}: not in generated.proto')
            label, ptype, num = pf
            matched.add(f['proto_name'])
            if num != f['proto_num']:
                fail(f'{message}.{f["proto_name"]}: number {num} in proto, {f["proto_num"]} in Go')
            card, elem = self.go_shape(path, f['type'], info['imports'])
            want_label = {'List': 'repeated', 'Map': 'map'}.get(card, 'optional')
            if label != want_label:
                fail(f'{message}.{f["proto_name"]}: Go {f["type"]} but proto {label} {ptype}')
            if ptype in SCALARS:
                ty, go = SCALARS[ptype]
                if elem != ('scalar', go):
                    fail(f'{message}.{f["proto_name"]}: Go {f["type"]} but proto {ptype}')
            else:
                fq = self.proto_type(package, ptype)
                if elem[0] == 'special':
                    ty = elem[1]
                    if self.special_proto.get(fq) != ty:
                        fail(f'{message}.{f["proto_name"]}: Go {ty} but proto {fq}')
                elif elem[0] == 'strlist':
                    ty = 'StrList'
                    if self.proto_message(fq) != {'items': ('repeated', 'string', 1)}:
                        fail(f'{message}.{f["proto_name"]}: {fq} is not a list of strings')
                elif elem[0] == 'struct':
                    target = self.message_name(elem[1], elem[2])
                    tprefix, tname = target.split('.', 1)
                    if fq != self.proto_package[tprefix] + '.' + tname:
                        fail(f'{message}.{f["proto_name"]}: Go {target} but proto {fq}')
                    ty = ('Msg', target)
                    refs.append(target)
                else:
                    fail(f'{message}.{f["proto_name"]}: Go {f["type"]} but proto {fq}')
            if f['inline'] and (card != 'Value' or ty[0] != 'Msg'):
                fail(f'{message}.{f["proto_name"]}: inline field is not a struct value')
            out.append(dict(num=num, json='' if f['inline'] else f['json'], inline=f['inline'],
                            omit_empty=f['omit_empty'], card=card, ty=ty))
        missing = set(pfields) - matched
        if missing:
            fail(f'{message}: proto fields without a Go field: {sorted(missing)}')
        return out, refs

    def proto_message(self, fq):
        package, _, name = fq.rpartition('.')
        if package not in self.proto:
            fail(f'{fq}: a message outside the packages of the table')
        return self.proto[package][1].get(name)

    def walk(self):
        table, todo = {}, list(ROOTS)
        while todo:
            message = todo.pop()
            if message in table:
                continue
            table[message], refs = self.fields(message)
            todo.extend(refs)
        return table


# ---------------------------------------------------------------------------------------------
# Output.

def rust_ty(ty):
    return f'Msg("{ty[1]}")' if isinstance(ty, tuple) else ty


def render(table):
    out = [
        f'//! Generated by scripts/kubesim-proto-messages.py from k8s.io/api {K8S_VERSION} and',
        f'//! k8s.io/apimachinery {K8S_VERSION}: check both out at that tag and run',
        '//! `scripts/kubesim-proto-messages.py API APIMACHINERY > crates/kubesim/src/server/proto/messages.rs`.',
        '//! Do not edit.',
        'use super::table::{',
        '    Card::{List, Map, Ptr, Value},',
        '    Field, Message,',
        '    Ty::{Bool, Bytes, FieldsV1, I32, I64, IntOrString, MicroTime, Msg, Quantity, Str, StrList, Time},',
        '};',
        '',
        '/// Every message reachable from the decodable kinds, sorted by name (one field a line, so',
        '/// rustfmt leaves it alone).',
        '#[rustfmt::skip]',
        'pub(super) static MESSAGES: &[Message] = &[',
    ]
    for name in sorted(table):
        out.append(f'    Message {{')
        out.append(f'        name: "{name}",')
        out.append(f'        fields: &[')
        for f in table[name]:
            out.append(
                f'            Field {{ num: {f["num"]}, json: "{f["json"]}", inline: {str(f["inline"]).lower()}, '
                f'omit_empty: {str(f["omit_empty"]).lower()}, card: {f["card"]}, ty: {rust_ty(f["ty"])} }},')
        out.append('        ],')
        out.append('    },')
    out.append('];')
    return '\n'.join(out) + '\n'


# ---------------------------------------------------------------------------------------------
# --compare-with: the hand-written string table of proto.rs.

def parse_string_table(path):
    src = open(path).read()
    m = re.search(r'pub const MESSAGES: &str = "\\\n(.*?)";', src, re.S)
    if not m:
        fail(f'{path}: no `pub const MESSAGES: &str` string')
    table, current = {}, None
    for line in m.group(1).split('\n'):
        if not line.strip():
            continue
        if not line.startswith(' '):
            current, line = line.split(':', 1)
            table[current] = []
        for spec in filter(None, (s.strip() for s in line.split(';'))):
            num, json, code = spec.split(' ')
            omit = json.endswith('?')
            json = json.rstrip('?')
            card = {'*': 'Ptr', '[': 'List', '{': 'Map'}.get(code[0], 'Value')
            if card != 'Value':
                code = code[1:]
            ty = {'s': 'Str', 'b': 'Bool', 'i': 'I32', 'l': 'I64', 'y': 'Bytes', '[s': 'StrList'}.get(code)
            if ty is None:
                ty = ('Msg', code) if '.' in code else code
            table[current].append(dict(num=int(num), json='' if json == '-' else json, inline=json == '-',
                                       omit_empty=omit, card=card, ty=ty))
    return table


def show(f):
    return f'{f["num"]} {f["json"] or "-"}{"?" if f["omit_empty"] else ""} {f["card"]} {rust_ty(f["ty"])}'


def compare(hand, generated):
    """Lines describing how `generated` differs from `hand`."""
    out = []
    for name in sorted(set(hand) | set(generated)):
        if name not in generated:
            out.append(f'- {name}: only in the hand table')
            continue
        if name not in hand:
            out.append(f'+ {name}: only in the generated table: ' + '; '.join(map(show, generated[name])))
            continue
        h = {f['num']: f for f in hand[name]}
        g = {f['num']: f for f in generated[name]}
        for num in sorted(set(h) | set(g)):
            if num not in g:
                out.append(f'- {name}: field {show(h[num])} only in the hand table')
            elif num not in h:
                out.append(f'+ {name}: field {show(g[num])} only in the generated table')
            elif h[num] != g[num]:
                out.append(f'~ {name}: field {show(h[num])} (hand) vs {show(g[num])} (generated)')
        common = [n for n in (f['num'] for f in hand[name]) if n in g]
        if common != [f['num'] for f in generated[name] if f['num'] in h]:
            out.append(f'~ {name}: field order differs')
    return out


def main(argv):
    compare_with = None
    if len(argv) == 4 and argv[2] == '--compare-with':
        compare_with = argv.pop(3)
        argv.pop(2)
    if len(argv) != 2:
        sys.exit(__doc__)
    table = Table(*argv).walk()
    if compare_with is None:
        sys.stdout.write(render(table))
        return
    diffs = compare(parse_string_table(compare_with), table)
    print(f'{len(table)} messages generated; {len(diffs)} differences from the hand table')
    print('\n'.join(diffs))


if __name__ == '__main__':
    main(sys.argv[1:])
