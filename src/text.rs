//! Text files as editors save them. ragdbeval reads UTF-8 only; a leading UTF-8 byte-order
//! mark (what Windows editors write) carries no content, so it is skipped: left in, it would
//! become part of the first query id or key and change results without an error. UTF-16 and
//! UTF-32, recognised by their byte-order mark or by the NUL bytes of ASCII text in UTF-16,
//! are refused with one error that says how to fix the file.
//!
//! Every reader of user text opens its file through [`read`], [`read_to_string`] or
//! [`open`], whose errors are plain `io::Error`s the caller names the file in.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

/// The UTF-8 byte-order mark.
pub const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Bytes looked at to recognise UTF-16 without a byte-order mark.
const SNIFF_BYTES: usize = 64;

/// Text in an encoding ragdbeval does not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0} text; save it as UTF-8")]
pub struct ForeignEncoding(pub &'static str);

impl From<ForeignEncoding> for io::Error {
    fn from(e: ForeignEncoding) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

/// The encoding of text that starts with `head`, when it is one ragdbeval does not read.
pub fn foreign_encoding(head: &[u8]) -> Option<ForeignEncoding> {
    // UTF-32 first: its little-endian mark begins with UTF-16's.
    let marks: [(&[u8], &str); 4] = [
        (b"\x00\x00\xFE\xFF", "UTF-32 BE"),
        (b"\xFF\xFE\x00\x00", "UTF-32 LE"),
        (b"\xFE\xFF", "UTF-16 BE"),
        (b"\xFF\xFE", "UTF-16 LE"),
    ];
    if let Some((_, name)) = marks.iter().find(|(mark, _)| head.starts_with(mark)) {
        return Some(ForeignEncoding(name));
    }
    // ASCII text in UTF-16 without a mark: one NUL in every pair of bytes, on the same side.
    let pairs: Vec<&[u8]> = head[..head.len().min(SNIFF_BYTES)]
        .chunks_exact(2)
        .collect();
    let nul_high = pairs.iter().filter(|p| p[0] != 0 && p[1] == 0).count();
    let nul_low = pairs.iter().filter(|p| p[0] == 0 && p[1] != 0).count();
    let most = pairs.len() * 3 / 4;
    match (nul_high, nul_low) {
        (n, 0) if n > 0 && n >= most => Some(ForeignEncoding("UTF-16 LE")),
        (0, n) if n > 0 && n >= most => Some(ForeignEncoding("UTF-16 BE")),
        _ => None,
    }
}

/// `bytes` without a leading UTF-8 byte-order mark; text in UTF-16 or UTF-32 is refused.
pub fn strip_bom(bytes: &[u8]) -> Result<&[u8], ForeignEncoding> {
    if let Some(rest) = bytes.strip_prefix(UTF8_BOM) {
        return Ok(rest);
    }
    match foreign_encoding(bytes) {
        Some(e) => Err(e),
        None => Ok(bytes),
    }
}

/// The bytes of a text file, without a UTF-8 byte-order mark; UTF-16 or UTF-32 is an
/// `InvalidData` error.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    without_bom(std::fs::read(path)?)
}

fn without_bom(mut bytes: Vec<u8>) -> io::Result<Vec<u8>> {
    let skip = bytes.len() - strip_bom(&bytes)?.len();
    bytes.drain(..skip);
    Ok(bytes)
}

/// A text file mapped into memory (no copy: large runs and qrels are parsed where the page
/// cache holds them), without its UTF-8 byte-order mark. Pipes and other files that cannot
/// be mapped are read.
pub enum MappedText {
    Mapped { map: memmap2::Mmap, start: usize },
    Read(Vec<u8>),
}

impl std::ops::Deref for MappedText {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            MappedText::Mapped { map, start } => &map[*start..],
            MappedText::Read(bytes) => bytes,
        }
    }
}

/// As [`read`], mapped instead of copied where the file is a regular, non-empty file.
pub fn map(path: &Path) -> io::Result<MappedText> {
    let mut file = File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() == 0 {
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut file, &mut bytes)?;
        return without_bom(bytes).map(MappedText::Read);
    }
    // SAFETY: the file is only read; one truncated by another process while mapped ends the
    // process with SIGBUS, the risk every memory-mapped reader takes.
    // Populated at once: the parse reads every page, and one call costs less than a fault each.
    let map = unsafe { memmap2::MmapOptions::new().populate().map(&file)? };
    let start = map.len() - strip_bom(&map)?.len();
    Ok(MappedText::Mapped { map, start })
}

/// A UTF-8 text file as a string, without its byte-order mark.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "not UTF-8 text; save it as UTF-8",
        )
    })
}

/// A text file opened for reading line by line, past its UTF-8 byte-order mark.
pub fn open(path: &Path) -> io::Result<BufReader<File>> {
    let mut reader = BufReader::new(File::open(path)?);
    skip_bom(&mut reader)?;
    Ok(reader)
}

/// Consumes a UTF-8 byte-order mark at the start of `reader`; UTF-16 or UTF-32 is an
/// `InvalidData` error.
pub fn skip_bom(reader: &mut impl BufRead) -> io::Result<()> {
    let head = reader.fill_buf()?;
    if head.starts_with(UTF8_BOM) {
        reader.consume(UTF8_BOM.len());
        return Ok(());
    }
    match foreign_encoding(head) {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
        text.encode_utf16()
            .flat_map(|u| {
                if big_endian {
                    u.to_be_bytes()
                } else {
                    u.to_le_bytes()
                }
            })
            .collect()
    }

    #[test]
    fn the_utf8_mark_is_skipped_and_nothing_else_is_touched() {
        assert_eq!(strip_bom(b"\xEF\xBB\xBF51 0 d 1\n"), Ok(&b"51 0 d 1\n"[..]));
        assert_eq!(strip_bom(b"51 0 d 1\n"), Ok(&b"51 0 d 1\n"[..]));
        assert_eq!(strip_bom(b""), Ok(&b""[..]));
        // Only a leading mark: one later in the text is content.
        assert_eq!(strip_bom(b"a\xEF\xBB\xBFb"), Ok(&b"a\xEF\xBB\xBFb"[..]));
        // Non-ASCII UTF-8 is not mistaken for anything else.
        let text = "q1 0 Straße 1\n日本語 0 d 2\n";
        assert_eq!(strip_bom(text.as_bytes()), Ok(text.as_bytes()));
    }

    #[test]
    fn utf16_and_utf32_are_named() {
        let name = |b: &[u8]| strip_bom(b).map(|_| ()).unwrap_err().0;
        let mut le = vec![0xFF, 0xFE];
        le.extend(utf16("51 0 d 1\n", false));
        assert_eq!(name(&le), "UTF-16 LE");
        let mut be = vec![0xFE, 0xFF];
        be.extend(utf16("51 0 d 1\n", true));
        assert_eq!(name(&be), "UTF-16 BE");
        assert_eq!(name(&utf16("51 0 d 1\n", false)), "UTF-16 LE");
        assert_eq!(name(&utf16("{\"query_id\": 1}", true)), "UTF-16 BE");
        assert_eq!(name(b"\xFF\xFE\x00\x005\x00\x00\x00"), "UTF-32 LE");
        assert_eq!(name(b"\x00\x00\xFE\xFF\x00\x00\x005"), "UTF-32 BE");
        assert_eq!(
            ForeignEncoding("UTF-16 LE").to_string(),
            "UTF-16 LE text; save it as UTF-8"
        );
    }

    #[test]
    fn files_and_readers_skip_the_mark() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.txt");
        std::fs::write(&path, b"\xEF\xBB\xBFq 0 d 1\n").unwrap();
        assert_eq!(read(&path).unwrap(), b"q 0 d 1\n");
        assert_eq!(&*map(&path).unwrap(), b"q 0 d 1\n");
        assert_eq!(read_to_string(&path).unwrap(), "q 0 d 1\n");
        let mut line = String::new();
        open(&path).unwrap().read_line(&mut line).unwrap();
        assert_eq!(line, "q 0 d 1\n");

        std::fs::write(&path, utf16("\u{feff}q 0 d 1\n", false)).unwrap();
        for err in [
            read(&path).unwrap_err(),
            map(&path).map(|_| ()).unwrap_err(),
            read_to_string(&path).unwrap_err(),
            open(&path).unwrap_err(),
        ] {
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
            assert_eq!(err.to_string(), "UTF-16 LE text; save it as UTF-8");
        }
        std::fs::write(&path, b"\xC3(").unwrap();
        assert!(
            read_to_string(&path)
                .unwrap_err()
                .to_string()
                .contains("not UTF-8")
        );
    }

    #[test]
    fn empty_files_and_pipes_are_read_not_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.txt");
        std::fs::write(&empty, b"").unwrap();
        assert!(matches!(map(&empty).unwrap(), MappedText::Read(b) if b.is_empty()));
        let file = dir.path().join("q.txt");
        std::fs::write(&file, b"q 0 d 1\n").unwrap();
        assert!(matches!(map(&file).unwrap(), MappedText::Mapped { .. }));
        // A FIFO: what a shell's process substitution passes.
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo (coreutils) failed");
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, b"\xEF\xBB\xBFq 0 d 2\n"))
        };
        let text = map(&fifo).unwrap();
        assert!(matches!(text, MappedText::Read(_)));
        assert_eq!(&*text, b"q 0 d 2\n");
        writer.join().unwrap().unwrap();
    }
}
