use serde_json::json;

use super::*;
use crate::tools::output::testing::TestEnv;

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn whole_small_file_with_line_numbers() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\r\nbeta\ngamma");
    let out = env.ok(&Read, json!({"path": "a.txt"})).await;
    assert_eq!(out, "     1\talpha\n     2\tbeta\n     3\tgamma\n");
}

#[tokio::test]
async fn large_images_are_scaled_down_to_fit() {
    use base64::Engine as _;
    let env = TestEnv::new();
    let big = image::RgbImage::from_fn(2000, 1000, |x, y| {
        image::Rgb([(x % 251) as u8, (y % 241) as u8, ((x * y) % 239) as u8])
    });
    let mut png = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(big)
        .write_to(&mut png, image::ImageFormat::Png)
        .unwrap();
    env.write("big.png", png.into_inner());
    let out = env.call(&Read, json!({"path": "big.png"})).await.unwrap();
    assert!(
        out.text.contains("2000×1000, scaled down to 1568×784"),
        "{}",
        out.text
    );
    let crate::content::ToolContent::Image { mime_type, data } = &out.content[0] else {
        panic!("{:?}", out.content);
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.as_bytes())
        .unwrap();
    assert!(bytes.len() <= images::MAX_IMAGE_BYTES);
    let sent = image::load_from_memory(&bytes).unwrap();
    assert_eq!((sent.width(), sent.height()), (1568, 784));
    assert!(mime_type == "image/png" || mime_type == "image/jpeg");
}

#[test]
fn long_lines_are_read_in_bounded_memory() {
    let mut data = vec![b'x'; 5_000_000];
    data.extend_from_slice(b"\nshort\n");
    let mut reader = BufReader::new(std::io::Cursor::new(data));
    let mut buf = Vec::new();
    assert_eq!(
        read_line_capped(&mut reader, &mut buf, 100).unwrap(),
        5_000_001
    );
    assert_eq!(buf.len(), 100);
    buf.clear();
    assert_eq!(read_line_capped(&mut reader, &mut buf, 100).unwrap(), 6);
    assert_eq!(buf, b"short\n");
}

#[tokio::test]
async fn ranges_and_paging_footer() {
    let env = TestEnv::new();
    env.write("a.txt", numbered(10));
    let out = env
        .ok(&Read, json!({"path": "a.txt", "offset": 3, "limit": 2}))
        .await;
    assert_eq!(
        out,
        "     3\tline 3\n     4\tline 4\n\n(showing lines 3-4 of 10; use offset=5 to read more)\n"
    );
    let out = env.ok(&Read, json!({"path": "a.txt", "offset": 9})).await;
    assert_eq!(
        out,
        "     9\tline 9\n    10\tline 10\n\n(showing lines 9-10 of 10)\n"
    );
    let err = env.err(&Read, json!({"path": "a.txt", "offset": 11})).await;
    assert!(
        err.contains("past the end") && err.contains("10 lines"),
        "{err}"
    );
}

#[tokio::test]
async fn large_files_are_paged_by_default() {
    let env = TestEnv::new();
    env.write("big.txt", "x\n".repeat(2_500));
    let out = env.ok(&Read, json!({"path": "big.txt"})).await;
    assert!(out.contains("  2000\tx\n"));
    assert!(!out.contains("  2001\t"));
    assert!(out.ends_with("(showing lines 1-2000 of 2500; use offset=2001 to read more)\n"));
}

#[tokio::test]
async fn byte_budget_ends_the_page_early() {
    let mut env = TestEnv::new();
    env.limits.max_bytes = 1_000;
    env.write("a.txt", numbered(500));
    let out = env.ok(&Read, json!({"path": "a.txt"})).await;
    assert!(out.len() <= 1_000, "{}", out.len());
    assert!(out.contains("output size limit"), "{out}");
    assert!(out.contains("of 500"), "{out}");
}

#[tokio::test]
async fn refuses_binary_and_directories_and_missing() {
    let env = TestEnv::new();
    env.write("bin.dat", b"abc\x00def");
    let err = env.err(&Read, json!({"path": "bin.dat"})).await;
    assert!(err.contains("binary"), "{err}");
    env.write("d/x.txt", "x");
    let err = env.err(&Read, json!({"path": "d"})).await;
    assert!(err.contains("directory") && err.contains("`ls`"), "{err}");
    let err = env.err(&Read, json!({"path": "nope.txt"})).await;
    assert!(err.contains("does not exist"), "{err}");
    let err = env.err(&Read, json!({"file": "x"})).await;
    assert!(err.contains("invalid `read` arguments"), "{err}");
}

#[tokio::test]
async fn empty_file_and_long_lines() {
    let env = TestEnv::new();
    env.write("e.txt", "");
    assert_eq!(
        env.ok(&Read, json!({"path": "e.txt"})).await,
        "e.txt is empty."
    );
    env.write("long.txt", "y".repeat(5_000));
    let out = env.ok(&Read, json!({"path": "long.txt"})).await;
    assert!(out.contains("[3000 more bytes]"), "{out}");
}

#[test]
fn describe_and_access_resolve_paths() {
    let env = TestEnv::new();
    env.write("src/lib.rs", "x");
    let d = Read.describe(
        &json!({"path": "src/../src/lib.rs", "offset": 7}),
        &env.root,
    );
    assert_eq!(d.title, "Read src/lib.rs");
    assert_eq!(
        d.locations,
        vec![Location {
            path: env.root.join("src/lib.rs"),
            line: Some(7)
        }]
    );
    assert_eq!(
        Read.access(&json!({"path": "../x"}), &env.root.join("src")),
        Access::Read {
            paths: vec![env.root.join("x")]
        }
    );
    assert_eq!(Read.kind(), ToolKind::Read);
}

mod hostile_images {
    use ferrite_test_support::hostile_images::{
        gif_with_screen, png_claiming, png_of_zeros, webp_claiming,
    };
    use serde_json::json;

    use super::super::{DecodeGate, Read};
    use crate::tools::Tool as _;
    use crate::tools::output::testing::TestEnv;

    #[test]
    fn the_crafted_files_are_what_they_claim() {
        let img = image::load_from_memory(&png_of_zeros(300, 200)).unwrap();
        assert_eq!((img.width(), img.height()), (300, 200));
        let reader = |bytes: Vec<u8>| {
            image::ImageReader::new(std::io::Cursor::new(bytes))
                .with_guessed_format()
                .unwrap()
                .into_dimensions()
                .unwrap()
        };
        assert_eq!(reader(gif_with_screen(11_000, 9_000)), (11_000, 9_000));
        assert_eq!(reader(webp_claiming(30_000, 20_000)), (30_000, 20_000));
        assert_eq!(reader(png_claiming(30_000, 30_000)), (30_000, 30_000));
    }

    /// Regression (issue 28): these decoded to hundreds of megabytes each (one `read` took the
    /// agent to 821 MB). Refused from their headers now, with a reason the model can pass on.
    #[tokio::test]
    async fn images_that_would_decode_too_large_are_refused_before_decoding() {
        let env = TestEnv::new();
        let files: [(&str, Vec<u8>); 4] = [
            ("claims.png", png_claiming(30_000, 30_000)),
            ("bomb.png", png_of_zeros(10_000, 10_000)),
            ("screen.gif", gif_with_screen(11_000, 11_000)),
            ("canvas.webp", webp_claiming(30_000, 30_000)),
        ];
        for (name, bytes) in files {
            env.write(name, bytes);
            let err = env.err(&Read, json!({"path": name})).await;
            assert!(
                err.contains("megapixels") && err.contains("not attached"),
                "{name}: {err}"
            );
        }
    }

    #[tokio::test]
    async fn a_large_image_within_the_limits_is_decoded_and_scaled_down() {
        let env = TestEnv::new();
        env.write("wide.png", png_of_zeros(3_200, 2_400));
        let out = env.call(&Read, json!({"path": "wide.png"})).await.unwrap();
        assert!(
            out.text.contains("3200×2400, scaled down to 1568×1176"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn image_decodes_take_turns() {
        let env = TestEnv::new();
        env.write("dot.png", png_of_zeros(2, 2));
        let gate = DecodeGate::default();
        let mut ctx = env.ctx();
        ctx.image_decodes = gate.clone();
        let held = gate.enter().await.unwrap();
        let input = json!({"path": "dot.png"});
        let waited = tokio::time::timeout(
            std::time::Duration::from_millis(200),
            Read.call(input.clone(), &ctx),
        )
        .await;
        assert!(
            waited.is_err(),
            "a read went on while another decode held the gate"
        );
        drop(held);
        let out = Read.call(input, &ctx).await.unwrap();
        assert!(out.text.contains("2×2"), "{}", out.text);
    }
}
