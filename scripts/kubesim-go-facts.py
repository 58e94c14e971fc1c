#!/usr/bin/env python3
"""Writes crates/kubesim/src/kinds/builtin/facts.rs: what the OpenAPI schemas of built-in kinds do
not say about the Go types behind them.

kubesim's built-in schemas come from k8s-openapi (which has them from the API server's
swagger document). Two things the API server knows are not in there, and this script reads
them from the Go type definitions:

* the Go type of each field, as the JSON decoder names it in its errors
  (`cannot unmarshal number into Go struct field Container.spec.containers.imagePullPolicy
  of type v1.PullPolicy`) where a named type hides behind a plain `string` or map schema;
* the `+listType`, `+listMapKey`, `patchStrategy`, `patchMergeKey`, `+mapType` and
  `+structType` markers, which the real `/openapi/v3` carries as `x-kubernetes-*`
  extensions (kubectl's client-side apply reads the patch ones).

Usage: check out, at the tags of the Kubernetes version kubesim reports (v0.33.0 for 1.33),
k8s.io/api, k8s.io/apimachinery, k8s.io/kube-aggregator and k8s.io/apiextensions-apiserver,
then

    scripts/kubesim-go-facts.py API APIMACHINERY KUBE_AGGREGATOR APIEXTENSIONS \\
        > crates/kubesim/src/kinds/builtin/facts.rs && cargo fmt -p ctop-kubesim

The parser reads the Go files line by line (the API packages follow one layout), not Go in
general.
"""
import os
import re
import sys

if len(sys.argv) != 5:
    sys.exit(__doc__)
API, MACHINERY, AGGREGATOR, EXTENSIONS = sys.argv[1:]

# Go package directory -> OpenAPI schema name prefix.
PKGS = {
    os.path.join(API, p): 'io.k8s.api.' + p.replace('/', '.')
    for p in ['core/v1', 'apps/v1', 'batch/v1', 'networking/v1', 'policy/v1', 'autoscaling/v2',
              'coordination/v1', 'discovery/v1', 'events/v1', 'rbac/v1', 'admissionregistration/v1',
              'storage/v1', 'authorization/v1', 'authentication/v1', 'scheduling/v1',
              'certificates/v1', 'node/v1', 'flowcontrol/v1']
}
PKGS[os.path.join(MACHINERY, 'pkg/apis/meta/v1')] = 'io.k8s.apimachinery.pkg.apis.meta.v1'
PKGS[os.path.join(AGGREGATOR, 'pkg/apis/apiregistration/v1')] = \
    'io.k8s.kube-aggregator.pkg.apis.apiregistration.v1'
PKGS[os.path.join(EXTENSIONS, 'pkg/apis/apiextensions/v1')] = \
    'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1'
IMPORTS = {
    'k8s.io/api/core/v1': os.path.join(API, 'core/v1'),
    'k8s.io/apimachinery/pkg/apis/meta/v1': os.path.join(MACHINERY, 'pkg/apis/meta/v1'),
}
# The kinds kubesim serves (crates/kubesim/src/kinds/registry.rs): where the walk starts.
ROOTS = [
    'io.k8s.api.core.v1.' + k for k in
    ['Namespace', 'ConfigMap', 'Secret', 'Service', 'ServiceAccount', 'Pod', 'PersistentVolumeClaim',
     'PersistentVolume', 'Event', 'Endpoints', 'ReplicationController', 'Node', 'ResourceQuota',
     'LimitRange', 'PodTemplate']
] + [
    'io.k8s.api.apps.v1.Deployment', 'io.k8s.api.apps.v1.StatefulSet', 'io.k8s.api.apps.v1.DaemonSet',
    'io.k8s.api.apps.v1.ReplicaSet', 'io.k8s.api.apps.v1.ControllerRevision', 'io.k8s.api.batch.v1.Job',
    'io.k8s.api.batch.v1.CronJob', 'io.k8s.api.networking.v1.Ingress', 'io.k8s.api.networking.v1.IngressClass',
    'io.k8s.api.networking.v1.NetworkPolicy', 'io.k8s.api.policy.v1.PodDisruptionBudget',
    'io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler', 'io.k8s.api.coordination.v1.Lease',
    'io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService', 'io.k8s.api.discovery.v1.EndpointSlice',
    'io.k8s.api.events.v1.Event', 'io.k8s.api.rbac.v1.Role', 'io.k8s.api.rbac.v1.RoleBinding',
    'io.k8s.api.rbac.v1.ClusterRole', 'io.k8s.api.rbac.v1.ClusterRoleBinding',
    'io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration',
    'io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration',
    'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition',
    'io.k8s.api.storage.v1.StorageClass', 'io.k8s.api.authorization.v1.SelfSubjectAccessReview',
    'io.k8s.api.authentication.v1.SelfSubjectReview', 'io.k8s.api.scheduling.v1.PriorityClass',
    'io.k8s.api.networking.v1.IPAddress', 'io.k8s.api.networking.v1.ServiceCIDR',
    'io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy',
    'io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding',
    'io.k8s.api.storage.v1.CSIDriver', 'io.k8s.api.storage.v1.CSINode',
    'io.k8s.api.storage.v1.CSIStorageCapacity', 'io.k8s.api.storage.v1.VolumeAttachment',
    'io.k8s.api.certificates.v1.CertificateSigningRequest', 'io.k8s.api.node.v1.RuntimeClass',
    'io.k8s.api.flowcontrol.v1.FlowSchema', 'io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration',
    'io.k8s.api.authentication.v1.TokenReview', 'io.k8s.api.authorization.v1.SubjectAccessReview',
    'io.k8s.api.authorization.v1.LocalSubjectAccessReview',
]
PRIMITIVES = {'string', 'bool', 'int', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32',
              'uint64', 'float32', 'float64', 'byte'}

types = {}  # (dir, name) -> info


def parse_pkg(d):
    for fn in sorted(os.listdir(d)):
        if not fn.endswith('.go') or fn.endswith('_test.go') or 'generated' in fn:
            continue
        src = re.sub(r'/\*.*?\*/', '', open(os.path.join(d, fn)).read(), flags=re.S)
        pkgname = re.search(r'^package (\w+)', src, re.M).group(1)
        imports = {}
        for im in re.finditer(r'^\s*(\w+)?\s*"([^"]+)"\s*$', src, re.M):
            imports[im.group(1) or im.group(2).rsplit('/', 1)[-1]] = im.group(2)
        lines = src.split('\n')
        comments = []
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.strip().startswith('//'):
                comments.append(line.strip()[2:].strip())
                i += 1
                continue
            m = re.match(r'^type (\w+) struct \{\s*$', line)
            if m:
                fields, fcomments = [], []
                i += 1
                while not lines[i].startswith('}'):
                    fl = lines[i].strip()
                    if fl.startswith('//'):
                        fcomments.append(fl[2:].strip())
                    elif fl == '':
                        fcomments = []
                    else:
                        fm = re.match(r'^(\w+)\s+([^`]+?)\s+`([^`]*)`', fl)
                        em = re.match(r'^([\w.*]+)\s+`([^`]*)`', fl)
                        if fm:
                            ftype, tag = fm.group(2), fm.group(3)
                        elif em:
                            ftype, tag = em.group(1), em.group(2)
                        else:  # an untagged field: not part of the API types' JSON
                            fcomments = []
                            i += 1
                            continue
                        jm = re.search(r'json:"([^"]*)"', tag)
                        ps = re.search(r'patchStrategy:"([^"]*)"', tag)
                        pk = re.search(r'patchMergeKey:"([^"]*)"', tag)
                        fields.append(dict(
                            type=ftype, json=jm.group(1).split(',')[0] if jm else '',
                            inline=not jm or ',inline' in jm.group(1),
                            patchStrategy=ps.group(1) if ps else None, patchMergeKey=pk.group(1) if pk else None,
                            markers=[c for c in fcomments if c.startswith('+')]))
                        fcomments = []
                    i += 1
                types[(d, m.group(1))] = dict(kind='struct', fields=fields, pkgname=pkgname, imports=imports,
                                              markers=[c for c in comments if c.startswith('+')])
                comments = []
                i += 1
                continue
            m = re.match(r'^type (\w+) ([^=\s].*?)\s*(//.*)?$', line)
            if m and not m.group(2).startswith('interface'):
                types[(d, m.group(1))] = dict(kind='named', underlying=m.group(2).strip(), pkgname=pkgname,
                                              imports=imports, markers=[c for c in comments if c.startswith('+')])
            comments = []
            i += 1


for d in PKGS:
    parse_pkg(d)


def resolve(d, ident, imports):
    """(package dir or None, name, Go package name) of a type identifier."""
    if '.' in ident:
        alias, name = ident.split('.', 1)
        path = imports.get(alias, alias)
        return IMPORTS.get(path), name, path.rsplit('/', 1)[-1]
    if (d, ident) in types:
        return d, ident, types[(d, ident)]['pkgname']
    return None, ident, None


def split_map(t):
    depth = 0
    for j in range(3, len(t)):
        if t[j] == '[':
            depth += 1
        elif t[j] == ']':
            depth -= 1
            if depth == 0:
                return t[4:j], t[j + 1:]
    raise ValueError(t)


def go_string(d, t, imports):
    """What Go's reflect.Type.String() says of the type expression t written in package d."""
    if t.startswith('*'):
        return '*' + go_string(d, t[1:], imports)
    if t.startswith('[]'):
        return '[]' + go_string(d, t[2:], imports)
    if t.startswith('map['):
        k, v = split_map(t)
        return 'map[' + go_string(d, k, imports) + ']' + go_string(d, v, imports)
    if t == 'byte':
        return 'uint8'
    if t in PRIMITIVES:
        return t
    if t in ('interface{}', 'any'):
        return 'interface {}'
    _, name, pkgname = resolve(d, t, imports)
    return f'{pkgname}.{name}'


def struct_refs(d, t, imports):
    """Schema names of the API structs a type expression mentions."""
    t = t.lstrip('*')
    if t.startswith('[]'):
        return struct_refs(d, t[2:], imports)
    if t.startswith('map['):
        return struct_refs(d, split_map(t)[1], imports)
    if t in PRIMITIVES:
        return []
    pd, name, _ = resolve(d, t, imports)
    info = types.get((pd, name))
    if info is None:
        return []
    if info['kind'] == 'named':
        return struct_refs(pd, info['underlying'], info['imports'])
    return [PKGS[pd] + '.' + name]


def flatten(d, name):
    """A struct's JSON fields, inline-embedded structs' fields promoted."""
    info = types[(d, name)]
    out = []
    for f in info['fields']:
        if f['inline']:
            pd, n, _ = resolve(d, f['type'].lstrip('*'), info['imports'])
            if (pd, n) not in types or types[(pd, n)]['kind'] != 'struct':
                return None  # e.g. metav1.Time embeds time.Time: a type with its own JSON form
            inner = flatten(pd, n)
            if inner is None:
                return None
            out.extend(inner)
        elif f['json'] != '-':
            out.append(dict(f, dir=d, imports=info['imports']))
    return out


def marker(markers, key):
    return [m.split('=', 1)[1] for m in markers if m.startswith('+' + key + '=')]


by_schema = {PKGS[d] + '.' + n: (d, n) for (d, n), info in types.items() if info['kind'] == 'struct'}


def derived(go):
    """Whether kubesim derives this Go type name from the schema alone (primitives, API
    structs, and slices and string-keyed maps of those)."""
    if go.startswith('[]'):
        return derived(go[2:])
    if go.startswith('map[string]'):
        return derived(go[len('map[string]'):])
    if go in ('string', 'bool', 'int32', 'int64', 'float64', 'uint8'):
        return True
    return any(s.rsplit('.', 2)[-2] + '.' + s.rsplit('.', 1)[-1] == go for s in by_schema)


go_rows, marker_rows, atomic_structs = [], [], []
seen, todo = set(), list(ROOTS)
while todo:
    schema = todo.pop()
    if schema in seen or schema not in by_schema:
        continue
    seen.add(schema)
    d, name = by_schema[schema]
    info = types[(d, name)]
    fields = flatten(d, name)
    if fields is None:
        continue
    if (marker(info['markers'], 'structType') or marker(info['markers'], 'mapType')) == ['atomic']:
        atomic_structs.append(schema)
    for f in fields:
        raw = f['type'].lstrip('*')
        todo.extend(struct_refs(f['dir'], raw, f['imports']))
        go = go_string(f['dir'], raw, f['imports'])
        under, named_markers = go, []
        pd, n, _ = resolve(f['dir'], raw, f['imports']) if not raw.startswith(('[]', 'map[')) else (None, None, None)
        if (pd, n) in types and types[(pd, n)]['kind'] == 'named':
            nt = types[(pd, n)]
            under = go_string(pd, nt['underlying'], nt['imports'])
            named_markers = nt['markers']
        elem = ''
        if under.startswith('[]'):
            elem = under[2:]
        elif under.startswith('map['):
            elem = split_map(under)[1]
        if not derived(go) or (elem and not derived(elem)):
            go_rows.append((schema, f['json'], go, elem.lstrip('*')))
        ms = f['markers'] + named_markers
        lt, keys = marker(ms, 'listType'), marker(ms, 'listMapKey')
        mt = marker(f['markers'], 'mapType')
        if lt or f['patchStrategy'] or mt:
            marker_rows.append((schema, f['json'], lt[0] if lt else '', ','.join(keys),
                                f['patchStrategy'] or '', f['patchMergeKey'] or '', mt[0] if mt else ''))

q = lambda s: '"' + s + '"'
print('//! Generated by `scripts/kubesim-go-facts.py` from the Go API types of Kubernetes 1.33')
print('//! (k8s.io/api, k8s.io/apimachinery, k8s.io/kube-aggregator and')
print('//! k8s.io/apiextensions-apiserver at v0.33.0); do not edit. What the OpenAPI schemas do not')
print('//! say: the Go names of named types, and the list, map and patch markers.')
print()
print('/// `(schema, field, Go type, Go element type)` where the Go type is not derived from the')
print('/// schema: named types such as `v1.PullPolicy` or `v1.ResourceList`. The element type is')
print('/// that of a slice or map, else empty.')
print('pub(super) const GO_TYPES: &[(&str, &str, &str, &str)] = &[')
for r in sorted(go_rows):
    print('    (' + ', '.join(q(x) for x in r) + '),')
print('];')
print()
print('/// `(schema, field, listType, listMapKeys (comma-separated), patchStrategy, patchMergeKey,')
print('/// mapType)`, empty where the Go type has no such marker.')
print('pub(super) const MARKERS: &[(&str, &str, &str, &str, &str, &str, &str)] = &[')
for r in sorted(marker_rows):
    print('    (' + ', '.join(q(x) for x in r) + '),')
print('];')
print()
print('/// Structs marked `+structType=atomic` (`x-kubernetes-map-type: atomic`).')
print('pub(super) const ATOMIC_STRUCTS: &[&str] = &[')
for s in sorted(atomic_structs):
    print('    ' + q(s) + ',')
print('];')
