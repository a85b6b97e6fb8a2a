use serde_json::json;

use super::*;
use crate::tools::output::testing::TestEnv;

#[test]
fn the_preview_is_the_edit_applied_to_the_file_as_it_is() {
    let env = TestEnv::new();
    env.write("a.rs", "fn a() {}\r\nfn b() {}\r\n");
    let input = json!({"path": "a.rs", "old_string": "fn b() {}\n", "new_string": "fn c() {}\n"});
    assert_eq!(
        Edit.preview(&input, &env.root),
        vec![ToolContent::Diff {
            path: env.root.join("a.rs"),
            old_text: Some("fn a() {}\r\nfn b() {}\r\n".into()),
            new_text: "fn a() {}\r\nfn c() {}\r\n".into()
        }]
    );
    let missing = json!({"path": "a.rs", "old_string": "nope", "new_string": "x"});
    let [ToolContent::Text { text }] = &Edit.preview(&missing, &env.root)[..] else {
        panic!()
    };
    assert!(
        text.starts_with("This edit will fail: old_string was not found in a.rs"),
        "{text}"
    );
    let no_file = json!({"path": "none.rs", "old_string": "a", "new_string": "b"});
    assert_eq!(Edit.preview(&no_file, &env.root), vec![]);
}

#[tokio::test]
async fn exact_unique_match_is_replaced_with_diff() {
    let env = TestEnv::new();
    env.write("a.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    let input = json!({"path": "a.rs", "old_string": "fn b() {}", "new_string": "fn bee() {}"});
    let desc = Edit.describe(&input, &env.root);
    assert_eq!(desc.title, "Edit a.rs");
    assert_eq!(desc.locations[0].line, Some(2));
    let out = env.call(&Edit, input).await.unwrap();
    assert_eq!(env.read("a.rs"), "fn a() {}\nfn bee() {}\nfn c() {}\n");
    assert_eq!(
        out.text,
        "Edited a.rs: replaced 1 occurrence (line 2).\n     1\tfn a() {}\n     2\tfn bee() {}\n     3\tfn c() {}\n"
    );
    assert_eq!(
        out.content,
        vec![ToolContent::Diff {
            path: env.root.join("a.rs"),
            old_text: Some("fn a() {}\nfn b() {}\nfn c() {}\n".into()),
            new_text: "fn a() {}\nfn bee() {}\nfn c() {}\n".into()
        }]
    );
}

#[tokio::test]
async fn zero_matches_explains_and_points_at_whitespace_difference() {
    let env = TestEnv::new();
    env.write("a.py", "def f():\n    return 1\n");
    let err = env
        .err(
            &Edit,
            json!({"path": "a.py", "old_string": "def f():\n  return 1", "new_string": "x"}),
        )
        .await;
    assert!(err.contains("old_string was not found in a.py"), "{err}");
    assert!(
        err.contains("different whitespace or indentation, is at lines 1-2"),
        "{err}"
    );
    assert!(err.contains("     2\t    return 1"), "{err}");
    assert_eq!(env.read("a.py"), "def f():\n    return 1\n");

    let err = env
        .err(
            &Edit,
            json!({"path": "a.py", "old_string": "    return 2", "new_string": "x"}),
        )
        .await;
    assert!(
        err.contains("most similar to the first line of old_string is line 2"),
        "{err}"
    );
}

#[tokio::test]
async fn multiple_matches_need_replace_all() {
    let env = TestEnv::new();
    env.write("a.txt", "x = 1\ny = 2\nx = 1\n");
    let err = env
        .err(
            &Edit,
            json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 3"}),
        )
        .await;
    assert!(
        err.contains("occurs 2 times in a.txt (lines 1, 3)"),
        "{err}"
    );
    assert!(err.contains("replace_all"), "{err}");
    let out = env
        .ok(
            &Edit,
            json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 3", "replace_all": true}),
        )
        .await;
    assert!(
        out.starts_with("Edited a.txt: replaced 2 occurrences (lines 1, 3)."),
        "{out}"
    );
    assert_eq!(env.read("a.txt"), "x = 3\ny = 2\nx = 3\n");
}

#[tokio::test]
async fn refuses_no_op_and_empty_and_missing() {
    let env = TestEnv::new();
    env.write("a.txt", "abc");
    let err = env
        .err(
            &Edit,
            json!({"path": "a.txt", "old_string": "a", "new_string": "a"}),
        )
        .await;
    assert!(err.contains("the same"), "{err}");
    let err = env
        .err(
            &Edit,
            json!({"path": "a.txt", "old_string": "", "new_string": "a"}),
        )
        .await;
    assert!(err.contains("use `write`"), "{err}");
    let err = env
        .err(
            &Edit,
            json!({"path": "b.txt", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(err.contains("does not exist"), "{err}");
}

#[tokio::test]
async fn crlf_files_keep_their_line_endings() {
    let env = TestEnv::new();
    env.write("w.txt", "one\r\ntwo\r\nthree\r\n");
    env.ok(
        &Edit,
        json!({"path": "w.txt", "old_string": "one\ntwo\n", "new_string": "1\n2\n2.5\n"}),
    )
    .await;
    assert_eq!(env.read("w.txt"), "1\r\n2\r\n2.5\r\nthree\r\n");
    // Strings without newlines match as they are; deletion with an empty new_string.
    env.ok(
        &Edit,
        json!({"path": "w.txt", "old_string": "2.5\r\n", "new_string": ""}),
    )
    .await;
    assert_eq!(env.read("w.txt"), "1\r\n2\r\nthree\r\n");
}

#[test]
fn mixed_endings_fall_back_to_the_literal_string() {
    let content = "a\r\nb\r\nc\nd\n\r\n";
    let applied = apply(content, "c\nd\n", "x\n", false).unwrap();
    assert_eq!(applied.new_text, "a\r\nb\r\nx\n\r\n");
    assert_eq!(applied.lines, vec![3]);
}

#[test]
fn similarity_scores() {
    assert_eq!(similarity("abc", "abc"), 1.0);
    assert!(similarity("return value", "return valu") > 0.8);
    assert!(similarity("return value", "xyz") < 0.1);
}
