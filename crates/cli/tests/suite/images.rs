//! Images the model can see: `read` of an image file attaches it, in each wire API's own form.

use ferrite_test_support::fake_provider::Script;
use ferrite_test_support::updates;
use serde_json::json;

use super::turns::{ALL, Api, rig};

/// A tiny PNG: the signature, then bytes that are not text.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06";

#[tokio::test]
async fn read_of_an_image_reaches_the_model_in_each_api_s_form() {
    let b64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAY=";
    for api in ALL {
        let mut r = rig(api).await;
        std::fs::write(r.world.ws().join("shot.png"), PNG).unwrap();
        r.fake
            .push(Script::new().tool_call("r1", "read", json!({"path": "shot.png"}).to_string()));
        r.fake.push(Script::new().text("a red dot"));
        let (before, answer) = r.prompt("what is in shot.png?").await;
        assert_eq!(answer["stopReason"], "end_turn", "{api:?}");
        let done = updates(&before)
            .into_iter()
            .rev()
            .find(|(k, u)| k == "tool_call_update" && u["toolCallId"] == "r1")
            .unwrap()
            .1;
        assert_eq!(
            done["content"][0]["content"]["type"], "image",
            "{api:?}: {done}"
        );
        assert_eq!(done["content"][0]["content"]["data"], b64, "{api:?}");

        let body = r.requests().last().unwrap().body.clone();
        let text = body.to_string();
        assert!(
            text.contains(b64),
            "{api:?}: the image data reaches the model"
        );
        let marker = match api {
            Api::Anthropic => r#""type":"image""#,
            Api::Responses => r#""type":"input_image""#,
            Api::Chat => r#""type":"image_url""#,
        };
        assert!(text.contains(marker), "{api:?}: {text}");
        assert!(text.contains("image/png"), "{api:?}");
    }
}

#[tokio::test]
async fn a_file_named_like_an_image_that_is_not_one_is_refused() {
    let mut r = rig(Api::Anthropic).await;
    std::fs::write(r.world.ws().join("fake.png"), "just text").unwrap();
    r.fake
        .push(Script::new().tool_call("r1", "read", json!({"path": "fake.png"}).to_string()));
    r.fake.push(Script::new().text("ok"));
    r.prompt("read it").await;
    let text = r.requests().last().unwrap().body.to_string();
    assert!(text.contains("its content is not one"), "{text}");
}
