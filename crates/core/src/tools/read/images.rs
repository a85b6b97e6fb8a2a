//! `read` of an image file: attached for the model to see, scaled down when it is large.
//!
//! An image file is hostile input: a few megabytes of PNG can claim 16,384×16,384 pixels (1 GiB
//! decoded), and one `read` of such a file took the agent to 821 MB, four at once to 2.5 GB.
//! So the header is read first and an image over [`MAX_PIXELS`] is refused before a byte of
//! pixels is decoded; the decoder runs with [`MAX_DECODE_BYTES`] as its allocation limit; and
//! only one image is decoded at a time in the process ([`DecodeGate`]).

use std::io::{BufReader, Read as _, Seek as _};
use std::path::Path;
use std::sync::Arc;

use crate::tools::{ToolError, ToolOutput};

/// The largest image `read` attaches: base64 of it stays within the 5 MB per image the providers
/// accept.
pub(super) const MAX_IMAGE_BYTES: usize = 3_750_000;
/// The longest edge an attached image keeps. Providers scale larger images down themselves
/// (Anthropic to 1568 px), so sending more costs bytes and tokens and shows the model nothing more.
const MAX_IMAGE_EDGE: u32 = 1568;
/// Image files larger than this are not opened.
const MAX_IMAGE_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// The most pixels an image may have to be decoded: 8K UHD (7680×4320), 133 MB as 8-bit RGBA.
pub const MAX_PIXELS: u64 = 7680 * 4320;
/// The longest side decoded.
const MAX_SIDE: u32 = 16_384;
/// What the decoder may allocate for one image.
pub const MAX_DECODE_BYTES: u64 = 256 * 1024 * 1024;

/// One image decode at a time in the process: memory is the process's, and decodes from
/// several sessions or subagents at once would add up. Held for the whole read of an image
/// file; a waiting read holds nothing. One per [`crate::services::Services`].
#[derive(Clone)]
pub struct DecodeGate(Arc<tokio::sync::Semaphore>);

impl Default for DecodeGate {
    fn default() -> Self {
        Self(Arc::new(tokio::sync::Semaphore::new(1)))
    }
}

impl DecodeGate {
    pub(super) async fn enter(&self) -> Result<tokio::sync::OwnedSemaphorePermit, ToolError> {
        self.0
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ToolError::Fatal("the image decoder is closed".into()))
    }
}

/// The media type of an image file, by extension.
pub(super) fn image_type(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

/// Whether `bytes` start like an image of `mime`: a `.png` that is really text is read as text.
fn has_image_signature(bytes: &[u8], mime: &str) -> bool {
    match mime {
        "image/png" => bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => bytes.starts_with(&[0xFF, 0xD8, 0xFF]),
        "image/gif" => bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
        "image/webp" => bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP",
        _ => false,
    }
}

/// An image file, attached for the model to see (and shown in the editor's card). Large images
/// are scaled down to [`MAX_IMAGE_EDGE`] and re-encoded so they fit [`MAX_IMAGE_BYTES`].
pub(super) fn read_image(
    path: &Path,
    shown: &str,
    mime: &'static str,
) -> Result<ToolOutput, ToolError> {
    use base64::Engine as _;
    let respond = ToolError::RespondToModel;
    let cannot_read = |e: std::io::Error| respond(format!("cannot read {shown}: {e}"));
    let file = crate::fsops::open_read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => respond(format!(
            "{shown} does not exist. Check the path, or use `find` to locate the file."
        )),
        _ => respond(format!("cannot read {shown}: {e}")),
    })?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_IMAGE_FILE_BYTES {
        return Err(respond(format!(
            "{shown} is an image of {len} bytes, too large to open (over {MAX_IMAGE_FILE_BYTES} \
             bytes); ask the user for a smaller version."
        )));
    }
    let mut head = Vec::with_capacity(12);
    (&file)
        .take(12)
        .read_to_end(&mut head)
        .map_err(cannot_read)?;
    if !has_image_signature(&head, mime) {
        return Err(respond(format!(
            "{shown} is named like an image ({mime}) but its content is not one."
        )));
    }
    let reader = || -> Result<_, ToolError> {
        (&file).rewind().map_err(cannot_read)?;
        image::ImageReader::new(BufReader::new(&file))
            .with_guessed_format()
            .map_err(cannot_read)
    };
    // The header alone: what decoding would cost is known before anything is allocated.
    let (width, height) = reader()?
        .into_dimensions()
        .map_err(|_| respond(format!("{shown} is not an image that can be decoded.")))?;
    let pixels = u64::from(width) * u64::from(height);
    if pixels > MAX_PIXELS || width.max(height) > MAX_SIDE {
        return Err(respond(format!(
            "{shown} is an image of {width}×{height} pixels ({:.1} megapixels); images over {} \
             megapixels or {MAX_SIDE} pixels a side are not decoded (they would take too much \
             memory), so it is not attached. Ask the user for a smaller version or a crop.",
            pixels as f64 / 1e6,
            MAX_PIXELS / 1_000_000
        )));
    }
    let small = usize::try_from(len).is_ok_and(|l| l <= MAX_IMAGE_BYTES);
    let (data, sent_mime, note) = if small && width.max(height) <= MAX_IMAGE_EDGE {
        let mut bytes = Vec::with_capacity(MAX_IMAGE_BYTES.min(len as usize));
        (&file).rewind().map_err(cannot_read)?;
        (&file)
            .take(MAX_IMAGE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(cannot_read)?;
        (bytes, mime, format!("{width}×{height}"))
    } else {
        let (scaled, sent_mime, w, h) =
            scale_down(reader()?, mime).map_err(|e| respond(format!("{shown} {e}")))?;
        let note = format!("{width}×{height}, scaled down to {w}×{h}");
        (scaled, sent_mime, note)
    };
    let size = data.len();
    let data = base64::engine::general_purpose::STANDARD.encode(&data);
    Ok(ToolOutput {
        text: format!(
            "{shown} is an image ({mime}, {note}, {size} bytes sent); it is attached below for \
             you to look at."
        ),
        content: vec![crate::content::ToolContent::Image {
            mime_type: sent_mime.to_owned(),
            data: data.into(),
        }],
    })
}

/// Decodes the image (within [`MAX_DECODE_BYTES`]), fits it into [`MAX_IMAGE_EDGE`] and encodes
/// it again: photos as JPEG, the rest as PNG, and as a smaller JPEG when that is still too
/// large. Returns the bytes, their media type and the new size; the error completes a sentence
/// that starts with the file's name.
fn scale_down<R: std::io::BufRead + std::io::Seek>(
    mut reader: image::ImageReader<R>,
    mime: &str,
) -> Result<(Vec<u8>, &'static str, u32, u32), String> {
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    let img = reader.decode().map_err(|e| match e {
        image::ImageError::Limits(_) => format!(
            "is too large to decode within the {} MiB Ferrite allows an image, so it is not \
             attached; ask the user for a smaller version.",
            MAX_DECODE_BYTES / (1024 * 1024)
        ),
        e => format!("could not be decoded: {e}"),
    })?;
    let img = fit(img);
    let (w, h) = (img.width(), img.height());
    let encode = |format: image::ImageFormat, img: &image::DynamicImage| {
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, format).map(|()| out.into_inner())
    };
    let jpeg = |quality: u8| -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let rgb = image::DynamicImage::ImageRgb8(img.to_rgb8());
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
            .encode_image(&rgb)
            .map_err(|e| format!("could not be scaled down: {e}"))?;
        Ok(out)
    };
    let first = if mime == "image/jpeg" {
        (jpeg(85)?, "image/jpeg")
    } else {
        (
            encode(image::ImageFormat::Png, &img)
                .map_err(|e| format!("could not be scaled down: {e}"))?,
            "image/png",
        )
    };
    if first.0.len() <= MAX_IMAGE_BYTES {
        return Ok((first.0, first.1, w, h));
    }
    let smaller = jpeg(70)?;
    if smaller.len() <= MAX_IMAGE_BYTES {
        return Ok((smaller, "image/jpeg", w, h));
    }
    Err("could not be scaled down: it is still too large after scaling down".into())
}

/// `img` within [`MAX_IMAGE_EDGE`]. A filtered resize keeps text legible but needs a buffer of
/// 16 bytes per pixel of the source's width (hundreds of MB for a large image), so a source over
/// twice the target is first averaged down to twice the target (no extra buffer), and the
/// decoded image is dropped as soon as that is done.
fn fit(img: image::DynamicImage) -> image::DynamicImage {
    let edge = img.width().max(img.height());
    if edge <= MAX_IMAGE_EDGE {
        return img;
    }
    let img = if edge > 2 * MAX_IMAGE_EDGE {
        img.thumbnail(2 * MAX_IMAGE_EDGE, 2 * MAX_IMAGE_EDGE)
    } else {
        img
    };
    img.resize(
        MAX_IMAGE_EDGE,
        MAX_IMAGE_EDGE,
        image::imageops::FilterType::Triangle,
    )
}
