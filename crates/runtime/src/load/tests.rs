//! Tests of loading scripts: TypeScript stripping, resolution, errors, determinism.

use super::resolve::{candidates, join};
use super::*;
use std::fs;
use tempfile::TempDir;

fn tree(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    dir
}

fn load(files: &[(&str, &str)]) -> Result<Bundle, LoadError> {
    let dir = tree(files);
    load_dir(dir.path(), "operator.ct")
}

fn js(bundle: &Bundle, name: &str) -> String {
    bundle.modules[name].js.clone()
}

/// Whether `code` parses as a plain JavaScript module without errors.
fn is_valid_js(code: &str) -> bool {
    let allocator = Allocator::default();
    let ret = Parser::new(&allocator, code, SourceType::mjs()).parse();
    ret.diagnostics.errors().next().is_none() && !ret.panicked
}

#[test]
fn strips_each_typescript_construct() {
    // (construct, source, must appear in the output, must not appear in the output)
    let cases: &[(&str, &str, &[&str], &[&str])] = &[
        (
            "interface",
            "interface Spec { replicas: number }\nexport const x = 1;",
            &["export const x = 1"],
            &["interface", "replicas"],
        ),
        (
            "type alias",
            "type Name = string | undefined;\nexport const n: Name = 'a';",
            &["export const n = \"a\""],
            &["type", "Name"],
        ),
        (
            "enum",
            "export enum Phase { Ready = 'Ready', Failed = 'Failed' }\nexport const p = Phase.Ready;",
            &["Phase[\"Ready\"] = \"Ready\"", "Phase.Ready"],
            &["enum"],
        ),
        (
            "generics",
            "function id<T extends object>(v: T): T { return v; }\nexport const m = new Map<string, number>(); id<{}>({});",
            &["function id(v)", "new Map()", "id({})"],
            &["<T", "<string"],
        ),
        (
            "as",
            "const o = { a: 1 } as const; export const v = (o as any).a as number;",
            &["const o = { a: 1 }", "o.a"],
            &[" as "],
        ),
        (
            "satisfies",
            "export const cfg = { port: 80 } satisfies Record<string, number>;",
            &["export const cfg = { port: 80 }"],
            &["satisfies", "Record"],
        ),
        (
            "non-null",
            "declare const m: Map<string, string>; export const v = m.get('a')!.length;",
            &["m.get(\"a\").length"],
            &["!"],
        ),
        (
            "import type / export type",
            "import type { Foo } from './types';\nexport type { Foo };\nexport type Bar = Foo;\nexport const x = 1;",
            &["export const x = 1"],
            &["import", "Foo", "Bar"],
        ),
        (
            "type-only import specifier",
            "import { type Foo, helper } from './types';\nexport const x: Foo = helper();",
            &["import { helper } from \"types.ts\"", "helper()"],
            &["Foo"],
        ),
        (
            "parameter properties",
            "export class Svc { constructor(private readonly name: string, public port = 80) {} }",
            &["this.name = name", "this.port = port"],
            &["private", "readonly", "public"],
        ),
        (
            "declare",
            "declare const VERSION: string;\ndeclare function f(): void;\ndeclare module 'x' { }\ndeclare global { var g: number }\nexport const x = 1;",
            &["export const x = 1"],
            &["declare", "VERSION", "global"],
        ),
        (
            "abstract class",
            "export abstract class Base { abstract run(): void; hello() { return 1; } }\nexport class Impl extends Base { run() {} }",
            &["export class Base", "hello()", "class Impl extends Base"],
            &["abstract"],
        ),
        (
            "optional chaining and nullish",
            "export const f = (o?: { a?: { b?: number } }) => o?.a?.b ?? 0;",
            &["o?.a?.b ?? 0"],
            &["?:"],
        ),
        ("namespace", "export namespace NS { export const k = 1; }", &["NS.k = 1"], &["namespace"]),
    ];
    for (construct, source, present, absent) in cases {
        let bundle = load(&[
            ("operator.ct", source),
            ("types.ts", "export interface Foo { a: 1 }\nexport function helper(): any { return 1; }\n"),
        ])
        .unwrap_or_else(|e| panic!("{construct}: {e}"));
        let out = js(&bundle, "operator.ct");
        assert!(is_valid_js(&out), "{construct}: not plain JS:\n{out}");
        for p in *present {
            assert!(out.contains(p), "{construct}: missing {p:?} in\n{out}");
        }
        for a in *absent {
            assert!(!out.contains(a), "{construct}: unexpected {a:?} in\n{out}");
        }
    }
}

#[test]
fn type_only_imports_load_nothing() {
    let b = load(&[
        (
            "operator.ct",
            "import type { A } from './missing';\nimport { B } from './b';\nimport { unused } from './c';\nlet x: A | B;\nexport {};",
        ),
        ("b.ts", "export interface B { b: 1 }"),
        ("c.ts", "export const unused = 1;"),
    ])
    .unwrap();
    assert_eq!(b.modules.keys().collect::<Vec<_>>(), ["operator.ct"]);

    // Imports TypeScript elides are still checked, like tsc does.
    let err =
        load(&[("operator.ct", "import { B } from './also-missing';\nlet x: B;\nexport {};")]).unwrap_err();
    assert!(matches!(err, LoadError::Unresolved { line: 1, column: 19, .. }), "{err:?}");
}

#[test]
fn output_is_an_es_module_with_rewritten_specifiers() {
    let b = load(&[
        (
            "operator.ct",
            "import { resource, operator } from \"https://github.com/cloudticon/k8s@master\";\n\
             import * as sdk from 'ctop';\n\
             import { util } from './lib/util';\n\
             import data from './data.json' with { type: 'json' };\n\
             export * from './lib';\n\
             export { util as u2 } from './lib/util.ts';\n\
             export const lazy = () => import('./lib/lazy.js');\n\
             resource(util, data, sdk); operator();\n",
        ),
        ("lib/util.ts", "export const util = 1;"),
        ("lib/index.ts", "export const fromIndex = 1;"),
        ("lib/lazy.ts", "export const later = 2;"),
        ("data.json", "{ \"b\": 1, \"a\": [true, null] }\n"),
    ])
    .unwrap();
    let out = js(&b, "operator.ct");
    assert!(out.contains("import { resource, operator } from \"ctop\";"), "{out}");
    assert!(out.contains("import * as sdk from \"ctop\";"), "{out}");
    assert!(out.contains("import { util } from \"lib/util.ts\";"), "{out}");
    assert!(out.contains("import data from \"data.json\";"), "{out}");
    assert!(out.contains("export * from \"lib/index.ts\";"), "{out}");
    assert!(out.contains("export { util as u2 } from \"lib/util.ts\";"), "{out}");
    assert!(out.contains("import(\"lib/lazy.ts\")"), "{out}");
    assert!(!out.contains("with"), "import attributes dropped: {out}");
    assert_eq!(
        b.modules.keys().collect::<Vec<_>>(),
        ["data.json", "lib/index.ts", "lib/lazy.ts", "lib/util.ts", "operator.ct"]
    );
    assert_eq!(js(&b, "data.json"), "export default { \"b\": 1, \"a\": [true, null] };\n");
    assert_eq!(b.modules["data.json"].source_map, None);
    assert!(b.modules["lib/util.ts"].source_map.is_some());
}

#[test]
fn resolution_order_and_parent_dirs() {
    let b = load(&[
        ("operator.ct", "import './a'; import './b.js'; import './c.mjs'; import './d';"),
        ("a.ts", "import '../x/../a.ts';"),
        ("a.ct", "throw 1;"),
        ("b.ts", "import './sub/deep';"),
        ("c.mjs", "export {};"),
        ("d/index.ct", "import '../c.mjs';"),
        ("sub/deep.js", "import '..';"),
        ("index.json", "{}"),
    ]);
    // "../x/../a.ts" from a.ts leaves the directory before coming back: rejected.
    assert!(matches!(b, Err(LoadError::OutsideRoot { .. })), "{b:?}");

    let b = load(&[
        ("operator.ct", "import './a'; import './b.js'; import './c.mjs'; import './d';"),
        ("a.ts", "import './sub/../a.ts';"),
        ("a.ct", "throw 1;"),
        ("b.ts", "import './sub/deep';"),
        ("c.mjs", "export {};"),
        ("d/index.ct", "import '../c.mjs';"),
        ("sub/deep.js", "import '..';"),
        ("index.json", "{}"),
    ])
    .unwrap();
    assert_eq!(
        b.modules.keys().collect::<Vec<_>>(),
        ["a.ts", "b.ts", "c.mjs", "d/index.ct", "index.json", "operator.ct", "sub/deep.js"]
    );
    assert!(js(&b, "operator.ct").contains("import \"b.ts\";"));
    assert!(js(&b, "sub/deep.js").contains("import \"index.json\";"));
}

#[test]
fn cycles_load() {
    let b = load(&[
        ("operator.ct", "import { a } from './a'; export const root = a;"),
        ("a.ts", "import { b } from './b'; export const a = () => b();"),
        ("b.ts", "import { root } from './operator.ct'; import { a } from './a'; export const b = () => [root, a];"),
    ])
    .unwrap();
    assert_eq!(b.modules.len(), 3);
    assert!(js(&b, "b.ts").contains("from \"operator.ct\""));
}

#[test]
fn syntax_error_position() {
    let err = load(&[("operator.ct", "const a = 1;\n\nfunction f( {\n  return a;\n}\n")]).unwrap_err();
    let LoadError::Syntax { file, line, .. } = &err else { panic!("{err:?}") };
    assert_eq!(file, "operator.ct");
    assert_eq!(*line, 4);
    assert!(err.to_string().starts_with("operator.ct:4:"), "{err}");

    let err = load(&[("operator.ct", "import './lib/x';"), ("lib/x.ts", "let a = 1;\n  let a = 2;\n")])
        .unwrap_err();
    assert!(
        matches!(&err, LoadError::Syntax { file, line: 2, column: 7, .. } if file == "lib/x.ts"),
        "{err:?}"
    );

    let err = load(&[("operator.ct", "// é\nconst s = 'é'; const = 3;")]).unwrap_err();
    assert!(matches!(err, LoadError::Syntax { line: 2, column: 22, .. }), "{err:?}");
}

#[test]
fn unresolved_import_position() {
    let err =
        load(&[("operator.ct", "import { x } from 'ctop';\n  import y from \"./lib/nope\";\n")]).unwrap_err();
    assert!(
        matches!(&err, LoadError::Unresolved { file, line: 2, column: 17, specifier }
            if file == "operator.ct" && specifier == "./lib/nope"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.starts_with("operator.ct:2:17: cannot resolve import \"./lib/nope\""), "{text}");

    // A file with an unsupported extension does not resolve either.
    let err = load(&[("operator.ct", "import './cfg.yaml';"), ("cfg.yaml", "a: 1")]).unwrap_err();
    assert!(matches!(err, LoadError::Unresolved { .. }), "{err:?}");
}

#[test]
fn bare_and_absolute_specifiers_are_rejected() {
    for spec in ["/etc/passwd", "https://example.com/x.js"] {
        let err = load(&[("operator.ct", &format!("import '{spec}';"))]).unwrap_err();
        assert!(
            matches!(&err, LoadError::NotRelative { line: 1, column: 8, specifier, .. } if specifier == spec),
            "{spec}: {err:?}"
        );
    }
    // A package that is not installed, and a Node built-in.
    let err = load(&[("operator.ct", "import 'lodash';")]).unwrap_err();
    assert!(
        matches!(&err, LoadError::Package { line: 1, column: 8, specifier, .. } if specifier == "lodash"),
        "{err:?}"
    );
    let err = load(&[("operator.ct", "import 'node:fs';")]).unwrap_err();
    assert!(matches!(&err, LoadError::NodeBuiltin { line: 1, column: 8, .. }), "{err:?}");
}

#[test]
fn imports_escaping_the_directory_are_rejected() {
    let outer = tree(&[("secret.ts", "export const s = 1;"), ("op/lib/x.ts", "export {};")]);
    fs::write(outer.path().join("op/operator.ct"), "import './lib/x';\nimport { s } from '../secret';\n")
        .unwrap();
    let err = load_dir(&outer.path().join("op"), "operator.ct").unwrap_err();
    assert!(
        matches!(&err, LoadError::OutsideRoot { file, line: 2, column: 19, specifier }
            if file == "operator.ct" && specifier == "../secret"),
        "{err:?}"
    );
    assert!(err.to_string().contains("outside the operator directory"));

    let err = load_dir(&outer.path().join("op"), "../secret.ts").unwrap_err();
    assert!(matches!(err, LoadError::Entry { .. }), "{err:?}");
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_directory_are_rejected() {
    let outer = tree(&[("secret.ts", "export const s = 1;"), ("op/operator.ct", "import './link';")]);
    std::os::unix::fs::symlink(outer.path().join("secret.ts"), outer.path().join("op/link.ts")).unwrap();
    let err = load_dir(&outer.path().join("op"), "operator.ct").unwrap_err();
    assert!(matches!(err, LoadError::OutsideRoot { .. }), "{err:?}");
}

#[test]
fn invalid_json_position() {
    let err = load(&[
        ("operator.ct", "import d from './data.json';\nconsole.log(d);"),
        ("data.json", "{\n  \"a\": 1,\n  \"b\": ,\n}"),
    ])
    .unwrap_err();
    assert!(
        matches!(&err, LoadError::Json { file, line: 3, column: 8, .. } if file == "data.json"),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("data.json:3:8: invalid JSON: expected value"), "{err}");

    let err = load(&[("operator.ct", "import './e.json';"), ("e.json", "")]).unwrap_err();
    assert!(matches!(err, LoadError::Json { line: 1, column: 1, .. }), "{err:?}");
}

#[test]
fn dynamic_import_needs_a_literal() {
    let err = load(&[("operator.ct", "const n = './a';\nawait import(n);")]).unwrap_err();
    assert!(matches!(err, LoadError::DynamicImport { line: 2, column: 7, .. }), "{err:?}");
}

#[test]
fn entry_and_directory_errors() {
    let dir = tree(&[("main.ts", "export {};")]);
    let err = load_dir(dir.path(), "operator.ct").unwrap_err();
    assert!(matches!(err, LoadError::Entry { .. }), "{err:?}");
    assert!(err.to_string().contains("does not exist"));
    // The entry resolves like an import.
    assert_eq!(load_dir(dir.path(), "main").unwrap().entry, "main.ts");
    assert_eq!(load_dir(dir.path(), "./main.ts").unwrap().entry, "main.ts");

    let err = load_dir(&dir.path().join("nope"), "operator.ct").unwrap_err();
    assert!(matches!(err, LoadError::Io { .. }), "{err:?}");

    let dir = tree(&[("operator.ct", "import './bin.ts';")]);
    fs::write(dir.path().join("bin.ts"), [0xff, 0xfe, 0x00]).unwrap();
    let err = load_dir(dir.path(), "operator.ct").unwrap_err();
    assert!(matches!(&err, LoadError::Io { path, .. } if path == Path::new("bin.ts")), "{err:?}");
}

#[test]
fn unsupported_typescript_is_reported() {
    let cases = [
        "const a = 1;\nexport = a;\n",
        "import fs = require('fs');\nfs;\n",
        "export namespace NS {\n  export let counter = 1;\n}\n",
    ];
    for source in cases {
        let err = load(&[("operator.ct", source)]).unwrap_err();
        assert!(matches!(&err, LoadError::Unsupported { line: 1 | 2, .. }), "{source}: {err:?}");
        assert!(err.to_string().contains("unsupported TypeScript"), "{err}");
    }
}

#[test]
fn deterministic_bundles() {
    let files: &[(&str, &str)] = &[
        ("operator.ct", "// the operator\nimport { a } from './lib/a';\nexport const x: number = a;\n"),
        ("lib/a.ts", "export const a = 1;\n"),
        ("cfg.json", "{\"k\": 1}"),
    ];
    let one = load(files).unwrap();
    let two = load(files).unwrap();
    assert_eq!(one, two);
    assert_eq!(one.to_gz(), two.to_gz());
    assert_eq!(one.sha256_hex(), two.sha256_hex());
    assert!(!one.modules["operator.ct"].source_map.as_ref().unwrap().contains("/tmp"));

    let mut changed = files.to_vec();
    changed[0].1 = "// the operator!\nimport { a } from './lib/a';\nexport const x: number = a;\n";
    let three = load(&changed).unwrap();
    assert_ne!(one.sha256_hex(), three.sha256_hex());
    assert_ne!(one.to_gz(), three.to_gz());
    assert_eq!(Bundle::from_gz(&three.to_gz()).unwrap(), three);
}

#[test]
fn original_position_maps_back_to_typescript() {
    let source = "interface Spec {\n  replicas: number;\n}\n\ntype T = Spec;\n\nexport function check(s: Spec): void {\n  if (s.replicas < 0) {\n    throw new Error('negative');\n  }\n}\n";
    let b = load(&[("operator.ct", source)]).unwrap();
    let out = js(&b, "operator.ct");
    let (idx, text) = out.lines().enumerate().find(|(_, l)| l.contains("throw")).unwrap();
    let line = idx as u32 + 1;
    let column = text.find("throw").unwrap() as u32 + 1;
    assert!(line < 9, "types were stripped, so the line moved: {out}");
    assert_eq!(b.original_position("operator.ct", line, column), Some((9, 5)));
    let col_new = text.find("new").unwrap() as u32 + 1;
    assert_eq!(b.original_position("operator.ct", line, col_new), Some((9, 11)));
    assert_eq!(b.original_position("operator.ct", 0, 1), None);
    assert_eq!(b.original_position("operator.ct", 500, 1), None);
}

#[test]
fn helpers() {
    assert_eq!(join("lib/a.ts", "../b").as_deref(), Some("b"));
    assert_eq!(join("a.ts", "./x/./y/../z").as_deref(), Some("x/z"));
    assert_eq!(join("a.ts", "../x"), None);
    assert_eq!(join("a.ts", ".").as_deref(), Some(""));
    assert_eq!(candidates("")[0], "index.ts");
    assert_eq!(&candidates("x.js")[..3], ["x.js", "x.ts", "x.js.ts"]);
    assert_eq!(line_col("ab\ncd", 4), (2, 2));
    assert_eq!(line_col("😀x", 4), (1, 3));
}

#[test]
fn packages_resolve_like_a_bundler() {
    let b = load(&[
        (
            "operator.ct",
            "import a from 'dual';\nimport { n } from 'cjs';\nimport * as ns from 'cjs';\nimport { own } from '#own';\nexport const x = [a, n, ns, own];\n",
        ),
        ("package.json", r##"{"imports": {"#own": "./src/own.ts"}}"##),
        ("src/own.ts", "export const own: number = 1;"),
        (
            "node_modules/dual/package.json",
            r#"{"name":"dual","exports":{".":{"node":"./node.js","require":"./req.cjs","import":"./esm.mjs"}}}"#,
        ),
        ("node_modules/dual/esm.mjs", "export default 1;"),
        ("node_modules/dual/node.js", "module.exports = require('fs');"),
        ("node_modules/dual/req.cjs", "module.exports = 2;"),
        ("node_modules/cjs/package.json", r#"{"name":"cjs","main":"lib/main"}"#),
        ("node_modules/cjs/lib/main.js", "exports.n = require('./data.json').n;\nexports.m = require(`dual`);\n"),
        ("node_modules/cjs/lib/data.json", "{\"n\": 3}"),
    ])
    .unwrap();
    assert_eq!(
        b.modules.keys().collect::<Vec<_>>(),
        [
            "node_modules/cjs/lib/data.json",
            "node_modules/cjs/lib/main.js",
            "node_modules/dual/esm.mjs",
            "operator.ct",
            "src/own.ts"
        ]
    );
    let main = js(&b, "node_modules/cjs/lib/main.js");
    assert!(is_valid_js(&main), "{main}");
    assert!(main.starts_with(
        "import __ctop_r0 from \"node_modules/cjs/lib/data.json\";import * as __ctop_r1 from \"node_modules/dual/esm.mjs\";"
    ), "{main}");
    assert!(main.contains("exports.n = __ctop_r0.n;\nexports.m = __ctop_r1;\n"), "line numbers kept: {main}");
    assert!(main.contains("export{__ctop_x0 as \"m\"};"), "{main}");
    assert!(main.contains("export{__ctop_x1 as \"n\"};"), "{main}");
    assert_eq!(b.modules["node_modules/cjs/lib/main.js"].source_map, None);
    let op = js(&b, "operator.ct");
    assert!(op.contains("from \"node_modules/cjs/lib/main.js\""), "{op}");
    assert!(op.contains("from \"src/own.ts\""), "{op}");
}
