//! Image files made to hurt a decoder: small on disk, huge once decoded, or with a header that
//! claims more than the file holds. Written by hand (no encoder would make them), in
//! milliseconds whatever the size they claim.

/// A valid RGBA PNG of `width`×`height` black, transparent pixels: its zlib stream repeats one
/// zero-byte match, so 10,000×10,000 (400 MB decoded) is a file of about 2.4 MB.
pub fn png_of_zeros(width: u32, height: u32) -> Vec<u8> {
    let raw = u64::from(height) * (1 + 4 * u64::from(width));
    png(width, height, &zlib_of_zeros(raw))
}

/// A PNG whose header says `width`×`height` and whose data is almost nothing.
pub fn png_claiming(width: u32, height: u32) -> Vec<u8> {
    png(width, height, &zlib_of_zeros(16))
}

/// A GIF whose logical screen is `width`×`height` with a single 1×1 frame: 40 bytes, which
/// decode to a whole screen of pixels.
pub fn gif_with_screen(width: u16, height: u16) -> Vec<u8> {
    let mut out = b"GIF89a".to_vec();
    out.extend(width.to_le_bytes());
    out.extend(height.to_le_bytes());
    out.extend([0, 0, 0]); // no global color table, background, aspect
    out.push(0x2c); // image descriptor: at 0,0, 1×1, a local table of 2 colours
    out.extend([0, 0, 0, 0, 1, 0, 1, 0, 0x80]);
    out.extend([0, 0, 0, 255, 255, 255]);
    // LZW, minimum code size 2: clear (4), index 0, end (5), in 3-bit codes.
    out.extend([2, 2, 0x44, 0x01, 0]);
    out.push(0x3b);
    out
}

/// An extended WebP whose canvas claims `width`×`height` (up to 2^24 a side) around a 1×1
/// lossless image header with no pixel data.
pub fn webp_claiming(width: u32, height: u32) -> Vec<u8> {
    let mut vp8x = vec![0u8; 4];
    vp8x.extend(&(width - 1).to_le_bytes()[..3]);
    vp8x.extend(&(height - 1).to_le_bytes()[..3]);
    let mut body = b"WEBP".to_vec();
    riff_chunk(&mut body, b"VP8X", &vp8x);
    riff_chunk(&mut body, b"VP8L", &[0x2f, 0, 0, 0, 0]);
    let mut out = b"RIFF".to_vec();
    out.extend((body.len() as u32).to_le_bytes());
    out.extend(body);
    out
}

fn riff_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend(kind);
    out.extend((data.len() as u32).to_le_bytes());
    out.extend(data);
    if data.len() % 2 == 1 {
        out.push(0);
    }
}

fn png(width: u32, height: u32, idat: &[u8]) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend(width.to_be_bytes());
    ihdr.extend(height.to_be_bytes());
    ihdr.extend([8, 6, 0, 0, 0]); // 8 bits, RGBA, deflate, no filter method, no interlace
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", idat);
    chunk(&mut out, b"IEND", &[]);
    out
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend((data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend(kind);
    out.extend(data);
    let crc = crc32(&out[start..]);
    out.extend(crc.to_be_bytes());
}

/// A zlib stream of `len` zero bytes: one fixed-Huffman block, a literal 0 then matches of 258
/// at distance 1 (13 bits each).
fn zlib_of_zeros(len: u64) -> Vec<u8> {
    let mut bits = Bits::default();
    bits.push(1, 1); // final block
    bits.push(1, 2); // fixed Huffman codes
    let literal_zero = |b: &mut Bits| b.push_code(0x30, 8);
    literal_zero(&mut bits);
    let mut left = len.saturating_sub(1);
    while left >= 258 {
        bits.push_code(0xc5, 8); // length 258 (symbol 285)
        bits.push_code(0, 5); // distance 1
        left -= 258;
    }
    for _ in 0..left {
        literal_zero(&mut bits);
    }
    bits.push_code(0, 7); // end of block
    let mut out = vec![0x78, 0x01];
    out.extend(bits.bytes);
    if bits.used > 0 {
        out.push(bits.partial);
    }
    // Adler-32 of zeros: a stays 1, b adds 1 per byte.
    let adler = (((len % 65_521) as u32) << 16) | 1;
    out.extend(adler.to_be_bytes());
    out
}

/// Deflate's bit order: values least significant bit first, Huffman codes most significant
/// first.
#[derive(Default)]
struct Bits {
    bytes: Vec<u8>,
    partial: u8,
    used: u8,
}

impl Bits {
    fn push(&mut self, value: u32, count: u8) {
        for i in 0..count {
            self.bit((value >> i) & 1 == 1);
        }
    }

    fn push_code(&mut self, code: u32, count: u8) {
        for i in (0..count).rev() {
            self.bit((code >> i) & 1 == 1);
        }
    }

    fn bit(&mut self, on: bool) {
        if on {
            self.partial |= 1 << self.used;
        }
        self.used += 1;
        if self.used == 8 {
            self.bytes.push(self.partial);
            self.partial = 0;
            self.used = 0;
        }
    }
}

fn crc32(data: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (n, slot) in table.iter_mut().enumerate() {
        let mut c = n as u32;
        for _ in 0..8 {
            c = if c & 1 == 1 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *slot = c;
    }
    let mut crc = !0u32;
    for &b in data {
        crc = table[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}
