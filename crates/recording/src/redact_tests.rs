use ctop_core::{Answer, FailureKind};
use serde_json::{Value, json};

use super::*;
use crate::types::{CallRecord, CallResult, HandlerKind, TapeEntry};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn hmac_matches_rfc_4231() {
    assert_eq!(
        hex(&hmac_sha256(&[0x0b; 20], b"Hi There")),
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
    );
    assert_eq!(
        hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
    // A key longer than a block is hashed first (test case 6).
    assert_eq!(
        hex(&hmac_sha256(&[0xaa; 131], b"Test Using Larger Than Block-Size Key - Hash Key First")),
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
    );
}

#[test]
fn masks_are_alphanumeric_as_long_and_keyed() {
    let m = Masker::with_key([7; 32]);
    for x in ["", "a", "hunter2", "ünïcødé", &"x".repeat(200)] {
        let mask = m.mask(x);
        assert_eq!(mask.chars().count(), x.chars().count(), "{x}");
        assert!(mask.bytes().all(|b| b.is_ascii_alphanumeric()), "{mask}");
        assert_eq!(mask, m.mask(x), "the same mask each time");
    }
    assert_ne!(m.mask("hunter22"), Masker::with_key([8; 32]).mask("hunter22"));
    assert_ne!(m.mask("hunter22"), m.mask("hunter23"));
}

#[test]
fn data_masks_are_base64_of_the_text_mask() {
    let m = Masker::with_key([7; 32]);
    let data = m.mask_data(&B64.encode("s3cret-password"));
    assert_eq!(
        B64.decode(&data).ok().and_then(|b| String::from_utf8(b).ok()),
        Some(m.mask("s3cret-password"))
    );
    let binary = m.mask_data(&B64.encode([0xff, 0xfe, 0x00, 0x01]));
    assert_eq!(B64.decode(&binary).map(|b| b.len()).ok(), Some(4));
}

fn call(object: Option<Value>, tape: Vec<TapeEntry>, outcome: Value) -> CallRecord {
    CallRecord {
        seq: 1,
        at: "2026-01-01T00:00:00.000Z".into(),
        at_ms: 1_767_225_600_000,
        handler: HandlerKind::Reconcile,
        controller: 0,
        controller_name: "webapp".into(),
        script: "abc".into(),
        object: object.map(|o| o.to_string()),
        tape,
        result: CallResult::Outcome(outcome),
        took_ms: 1.0,
        runtime: None,
    }
}

fn secret(name: &str, data: Value, string_data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "default"},
           "data": data, "stringData": string_data})
}

#[test]
fn secrets_and_random_strings_are_masked_consistently() {
    let m = Masker::with_key([1; 32]);
    let token = "Zq8XtK2mPw4RvN7bLc9YhJ3sDf6GaE1u";
    let password = "correct horse battery";
    let plain = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"plain"},"data":{"k":"v"}}"#;
    let list = format!("[{plain}, {}]", secret("db", json!({"password": B64.encode(password)}), json!(null)));
    let mut c = call(
        Some(
            json!({"apiVersion": "demo/v1", "kind": "WebApp", "metadata": {"name": "a"}, "spec": {"note": password}}),
        ),
        vec![
            TapeEntry::List { kind: "v1/Secret".into(), answer: Some(list) },
            TapeEntry::Get {
                kind: "v1/Secret".into(),
                namespace: Some("default".into()),
                name: "tok".into(),
                answer: Some(Some(
                    secret("tok", json!({"token": B64.encode(token)}), json!(null)).to_string(),
                )),
            },
            TapeEntry::Supply {
                source: "randomString".into(),
                detail: Some("32".into()),
                init: None,
                answer: Answer::Text(token.into()),
            },
            TapeEntry::Supply {
                source: "fetch".into(),
                detail: Some(format!("https://x.example/?t={token}")),
                init: Some(json!({"headers": {"Authorization": "Bearer abc", "Accept": "x"}}).to_string()),
                answer: Answer::Text(json!({"status": 200, "body": "ok"}).to_string()),
            },
        ],
        json!({
            "applies": [
                secret("tok", json!({}), json!({"token": token})),
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
                 "data": {"token": token, "url": format!("https://u:{password}@db"), "b64": B64.encode(token)}},
            ],
        }),
    );
    redact(&mut c, &m);
    let everything = format!("{c:?}");
    for original in [token, password, &B64.encode(token), &B64.encode(password), "Bearer abc"] {
        assert!(!everything.contains(original), "{original} is still in {everything}");
    }
    let masked_token = m.mask(token);
    let CallResult::Outcome(out) = &c.result else { panic!("an outcome") };
    assert_eq!(out["applies"][0]["stringData"]["token"], json!(masked_token));
    assert_eq!(out["applies"][1]["data"]["token"], json!(masked_token));
    assert_eq!(out["applies"][1]["data"]["url"], json!(format!("https://u:{}@db", m.mask(password))));
    assert_eq!(out["applies"][1]["data"]["b64"], json!(B64.encode(&masked_token)));
    let TapeEntry::Get { answer: Some(Some(text)), .. } = &c.tape[1] else { panic!("a get") };
    let read: Value = serde_json::from_str(text).expect("JSON");
    assert_eq!(read["data"]["token"], json!(B64.encode(&masked_token)), "read back as data: the same mask");
    assert!(matches!(&c.tape[2], TapeEntry::Supply { answer: Answer::Text(t), .. } if *t == masked_token));
    let TapeEntry::Supply { detail, init, .. } = &c.tape[3] else { panic!("a fetch") };
    assert_eq!(detail.as_deref(), Some(format!("https://x.example/?t={masked_token}").as_str()));
    let init: Value = serde_json::from_str(init.as_deref().unwrap_or("")).expect("JSON");
    assert_eq!(init["headers"], json!({"Authorization": "<redacted>", "Accept": "x"}));
    let TapeEntry::List { answer: Some(text), .. } = &c.tape[0] else { panic!("a list") };
    assert!(text.starts_with(&format!("[{plain},")), "items without secrets keep their text: {text}");
    let object: Value = serde_json::from_str(c.object.as_deref().unwrap_or("")).expect("JSON");
    assert_eq!(
        object["spec"]["note"],
        json!(m.mask(password)),
        "a secret copied elsewhere is masked there too"
    );
}

#[test]
fn a_call_without_secrets_keeps_its_text() {
    let m = Masker::with_key([1; 32]);
    let object = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}"#;
    let mut c = call(None, vec![], json!({"applies": []}));
    c.object = Some(object.into());
    c.tape.push(TapeEntry::Supply {
        source: "randomString".into(),
        detail: Some("2".into()),
        init: None,
        answer: Answer::Text("ab".into()),
    });
    c.result = CallResult::Failure { kind: FailureKind::Exception, message: "ab".into(), frame: None };
    redact(&mut c, &m);
    assert_eq!(c.object.as_deref(), Some(object), "key order and all");
    let CallResult::Failure { message, .. } = &c.result else { panic!("a failure") };
    assert_eq!(message, "ab", "answers shorter than 4 are masked but not replaced elsewhere");
    assert!(matches!(&c.tape[0], TapeEntry::Supply { answer: Answer::Text(t), .. } if *t == m.mask("ab")));
}

#[test]
fn escaped_originals_are_found() {
    let mut table = Table::default();
    table.add("p&ss<w>rd\"quoted", "MASKEDMASKEDMASK", 8);
    table.finish();
    let mut text = json!({"v": "x p&ss<w>rd\"quoted y"}).to_string().replace('&', "\\u0026");
    replace_in_json(&mut text, &table);
    assert_eq!(text, json!({"v": "x MASKEDMASKEDMASK y"}).to_string());
}
