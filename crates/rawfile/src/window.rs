//! The fast path of `reader::read_run`: serde_json parses a byte slice faster than it reads from a
//! reader (its reader path goes byte by byte), but a whole file, however large, must not be held
//! in memory.
//! So a small scanner walks the top-level object of `results.json` through a window of the file,
//! finds where each top-level value and each request record ends, and hands those slices to the
//! readers of `common_shapes` (or the same serde visitors the reader path uses). Only the current request
//! (or the `timeline` value) is held, never the request list.
//!
//! A file that can be read at offsets (`ReadAt`: the cached or local file) and was written with
//! indentation, as the real files are, is read with less scanning: the `timeline` object is found
//! by its closing line, and the request list is read in pieces by two threads straight from the
//! file (`reader`); the window then moves on past them (`Forward`).
//!
//! The scanner only finds boundaries; every value is still parsed and validated. Anything
//! unexpected (malformed JSON, a truncated file, an indentation that does not match) makes it give
//! up with `Fallback`, and the caller reads the file again through the reader path, whose answer
//! (or error message) is the reference.

use std::io::Read;

use serde::de::DeserializeSeed;

/// The fast path could not read the file; use the reader path.
#[derive(Debug, PartialEq)]
pub struct Fallback;

const CHUNK: usize = 1 << 20;

/// Index of the first byte of `s` that `table` marks (quotes and brackets), skipping eight bytes at
/// a time while none of them can be one: numbers, whitespace and commas are most of a raw file.
fn structure_pos(s: &[u8], table: &[bool; 256]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS != 0;
    let mut i = 0;
    loop {
        while let Some(w) = s.get(i..i + 8) {
            let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
            // `"`, or one of `[ ] { }` (which `(b | 0x20) & 0xF9` maps to 0x79, as it does
            // `Y _ y` and DEL; those are then passed over below).
            let quote = has_zero_byte(w ^ (ONES * u64::from(b'"')));
            let bracket = has_zero_byte(((w | (ONES * 0x20)) & (ONES * 0xF9)) ^ (ONES * 0x79));
            if quote || bracket {
                break;
            }
            i += 8;
        }
        let end = (i + 8).min(s.len());
        if let Some(k) = s[i..end].iter().position(|&b| table[b as usize]) {
            return Some(i + k);
        }
        if end == s.len() {
            return None;
        }
        i = end;
    }
}

/// Reads at an offset: a file, or bytes in memory. A long request list is then read in pieces
/// by two threads at once, each piece straight from the source (see `reader`).
pub trait ReadAt: Sync {
    /// Fill `buf` from `offset` as far as the source goes; the count read (short at its end).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize>;
    /// The size now (the source may still change; a short read is its end).
    fn size(&self) -> std::io::Result<u64>;
}

impl ReadAt for std::fs::File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let mut n = 0;
        while n < buf.len() {
            match FileExt::read_at(self, &mut buf[n..], offset + n as u64) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
    fn size(&self) -> std::io::Result<u64> {
        self.metadata().map(|m| m.len())
    }
}

impl ReadAt for &[u8] {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.len());
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.len() as u64)
    }
}

/// A reader the window can move forward without reading what it passes.
pub(super) trait Forward: Read {
    fn forward(&mut self, n: u64) -> std::io::Result<()>;
}

/// Any reader, moved forward by reading.
pub(super) struct Plain<R>(pub R);

impl<R: Read> Read for Plain<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl<R: Read> Forward for Plain<R> {
    fn forward(&mut self, n: u64) -> std::io::Result<()> {
        let skipped = std::io::copy(&mut (&mut self.0).take(n), &mut std::io::sink())?;
        if skipped < n {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
    }
}

/// A `ReadAt` read in order from an offset.
pub(super) struct AtReader<'a> {
    pub src: &'a dyn ReadAt,
    pub pos: u64,
}

impl Read for AtReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.src.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Forward for AtReader<'_> {
    fn forward(&mut self, n: u64) -> std::io::Result<()> {
        self.pos += n;
        Ok(())
    }
}

/// A buffer handed over with a value's range in it.
pub(super) type Taken = (Vec<u8>, std::ops::Range<usize>);

/// A sliding window over a reader.
pub(super) struct Window<R> {
    reader: R,
    buf: Vec<u8>,
    /// Start of unconsumed bytes.
    pos: usize,
    /// Offset in the reader's stream of `buf[0]`.
    base: u64,
    eof: bool,
    /// The indentation of the top-level keys, when `object` found them one per line.
    indent: Option<usize>,
}

impl<R: Read> Window<R> {
    pub(super) fn new(reader: R) -> Self {
        Window {
            reader,
            buf: Vec::with_capacity(2 * CHUNK),
            pos: 0,
            base: 0,
            eof: false,
            indent: None,
        }
    }

    /// Offset in the stream of the next unconsumed byte.
    pub(super) fn position(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Read more; `false` at the end of the file.
    fn fill(&mut self) -> Result<bool, Fallback> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.base += self.pos as u64;
            self.pos = 0;
        }
        // Read into spare capacity (no zero-filling first).
        self.buf.reserve(CHUNK);
        let n = loop {
            match (&mut self.reader)
                .take(CHUNK as u64)
                .read_to_end(&mut self.buf)
            {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return Err(Fallback),
            }
        };
        if n == 0 {
            self.eof = true;
        }
        Ok(n > 0)
    }

    /// The next byte after whitespace (not consumed).
    pub(super) fn peek(&mut self) -> Result<Option<u8>, Fallback> {
        loop {
            while self.pos < self.buf.len() {
                match self.buf[self.pos] {
                    b' ' | b'\n' | b'\r' | b'\t' => self.pos += 1,
                    b => return Ok(Some(b)),
                }
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Consume `b` (after whitespace) or give up.
    fn expect(&mut self, b: u8) -> Result<(), Fallback> {
        if self.peek()? == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Fallback)
        }
    }

    /// Offset (from `pos`) just past the value starting at `pos`, reading more as needed.
    fn value_end(&mut self) -> Result<usize, Fallback> {
        // Bytes that matter outside strings: quotes and brackets (and, for a top-level scalar,
        // its delimiters). Inside strings memchr finds the quote or backslash.
        const fn table(scalar: bool) -> [bool; 256] {
            let mut t = [false; 256];
            if scalar {
                t[b',' as usize] = true;
                t[b'}' as usize] = true;
                t[b']' as usize] = true;
                t[b' ' as usize] = true;
                t[b'\n' as usize] = true;
                t[b'\r' as usize] = true;
                t[b'\t' as usize] = true;
            } else {
                t[b'"' as usize] = true;
                t[b'{' as usize] = true;
                t[b'}' as usize] = true;
                t[b'[' as usize] = true;
                t[b']' as usize] = true;
            }
            t
        }
        static STRUCTURE: [bool; 256] = table(false);
        static SCALAR_END: [bool; 256] = table(true);
        let mut i = self.pos;
        let mut depth = 0usize;
        let mut in_str = false;
        let scalar = !matches!(self.buf.get(i), Some(b'{' | b'[' | b'"'));
        loop {
            if i >= self.buf.len() {
                let offset = i - self.pos;
                if !self.fill()? {
                    // A scalar may end at the end of the file; anything else is truncated.
                    return if scalar { Ok(offset) } else { Err(Fallback) };
                }
                i = self.pos + offset;
                continue;
            }
            if scalar {
                match self.buf[i..].iter().position(|&b| SCALAR_END[b as usize]) {
                    Some(k) => return Ok(i + k - self.pos),
                    None => {
                        i = self.buf.len();
                        continue;
                    }
                }
            }
            if in_str {
                match memchr::memchr2(b'"', b'\\', &self.buf[i..]) {
                    None => i = self.buf.len(),
                    Some(k) if self.buf[i + k] == b'\\' => {
                        // Skip the escaped byte, which may be in the next read.
                        if i + k + 1 >= self.buf.len() {
                            let offset = i + k - self.pos;
                            if !self.fill()? {
                                return Err(Fallback);
                            }
                            i = self.pos + offset;
                        } else {
                            i += k + 2;
                        }
                    }
                    Some(k) => {
                        in_str = false;
                        i += k + 1;
                        if depth == 0 {
                            return Ok(i - self.pos);
                        }
                    }
                }
                continue;
            }
            let Some(k) = structure_pos(&self.buf[i..], &STRUCTURE) else {
                i = self.buf.len();
                continue;
            };
            i += k;
            match self.buf[i] {
                b'"' => in_str = true,
                b'{' | b'[' => depth += 1,
                _ => {
                    depth = depth.checked_sub(1).ok_or(Fallback)?;
                    if depth == 0 {
                        return Ok(i + 1 - self.pos);
                    }
                }
            }
            i += 1;
        }
    }

    /// Parse the next value with `seed` from a slice, and consume it.
    pub(super) fn parse<S, T>(&mut self, seed: S) -> Result<T, Fallback>
    where
        S: for<'de> DeserializeSeed<'de, Value = T>,
    {
        if self.peek()?.is_none() {
            return Err(Fallback);
        }
        let n = self.value_end()?;
        let slice = &self.buf[self.pos..self.pos + n];
        let mut de = serde_json::Deserializer::from_slice(slice);
        let v = seed.deserialize(&mut de).map_err(|_| Fallback)?;
        de.end().map_err(|_| Fallback)?;
        self.pos += n;
        Ok(v)
    }

    /// Skip the next value.
    pub(super) fn skip(&mut self) -> Result<(), Fallback> {
        self.parse(std::marker::PhantomData::<serde::de::IgnoredAny>)
            .map(|_| ())
    }

    /// Walk a top-level object: `on_key` is called with each key and this window positioned at
    /// its value, which it must consume.
    pub(super) fn object(
        &mut self,
        on_key: impl FnMut(&str, &mut Self) -> Result<(), Fallback>,
    ) -> Result<(), Fallback> {
        self.indent = self.member_indent()?;
        self.expect(b'{')?;
        self.members(on_key)?;
        match self.peek()? {
            None => Ok(()),
            Some(_) => Err(Fallback),
        }
    }

    /// Walk an object value inside the top-level one, as `object` does.
    pub(super) fn inner_object(
        &mut self,
        on_key: impl FnMut(&str, &mut Self) -> Result<(), Fallback>,
    ) -> Result<(), Fallback> {
        self.expect(b'{')?;
        self.members(on_key)
    }

    /// An object's members and its `}`, after its `{`.
    fn members(
        &mut self,
        mut on_key: impl FnMut(&str, &mut Self) -> Result<(), Fallback>,
    ) -> Result<(), Fallback> {
        if self.peek()? == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            let key: String = self.parse(std::marker::PhantomData::<String>)?;
            self.expect(b':')?;
            on_key(&key, self)?;
            match self.peek()? {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(Fallback),
            }
        }
    }

    /// An array value, element by element through `on_item` (which must consume each); `Ok(false)`
    /// without consuming anything when the value is not an array.
    pub(super) fn array(
        &mut self,
        mut on_item: impl FnMut(&mut Self) -> Result<(), Fallback>,
    ) -> Result<bool, Fallback> {
        if self.peek()? != Some(b'[') {
            return Ok(false);
        }
        self.pos += 1;
        if self.peek()? == Some(b']') {
            self.pos += 1;
            return Ok(true);
        }
        loop {
            on_item(self)?;
            match self.peek()? {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(true);
                }
                _ => return Err(Fallback),
            }
        }
    }

    /// Hand the bytes of the next value to `f`, and consume it.
    pub(super) fn take_raw(&mut self, f: impl FnOnce(&[u8])) -> Result<(), Fallback> {
        if self.peek()?.is_none() {
            return Err(Fallback);
        }
        let n = self.value_end()?;
        f(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(())
    }

    /// The indentation of the members of the object value that comes next, when its `{` is
    /// followed by a newline, spaces and the first key (as `json.dump(..., indent=...)` writes
    /// it); nothing consumed.
    pub(super) fn member_indent(&mut self) -> Result<Option<usize>, Fallback> {
        if self.peek()? != Some(b'{') {
            return Ok(None);
        }
        // Enough to see the first key's line (an indentation is a few dozen spaces at most).
        if self.buf.len() < self.pos + 256 {
            self.fill()?;
        }
        let rest = &self.buf[self.pos + 1..];
        Ok(match rest.first() {
            Some(b'\n') => rest[1..]
                .iter()
                .position(|&b| b != b' ')
                .filter(|&k| rest[1 + k] == b'"'),
            _ => None,
        })
    }

    /// `take_raw` of a value written as `json.dump(..., indent=...)` writes a list or object
    /// member at indentation `indent`: its end is the first line that is that indentation and
    /// the closing bracket (every line inside is deeper), found with memmem instead of a
    /// structure scan. `f` must check that the bytes are exactly one value, which proves the end
    /// (a list or object that is a whole value ends at its own bracket). Any other layout is
    /// read by `take_raw`.
    pub(super) fn take_raw_closed(
        &mut self,
        indent: usize,
        f: impl FnOnce(&[u8]),
    ) -> Result<(), Fallback> {
        let close = match self.peek()? {
            Some(b'[') => b']',
            Some(b'{') => b'}',
            _ => return self.take_raw(f),
        };
        if self.buf.len() < self.pos + 2 {
            self.fill()?;
        }
        if self.buf.get(self.pos + 1) != Some(&b'\n') {
            return self.take_raw(f);
        }
        let end = self
            .closing_line(&closing_line(indent, close))?
            .ok_or(Fallback)?;
        f(&self.buf[self.pos..self.pos + end]);
        self.pos += end;
        Ok(())
    }

    /// The next value's bytes, consumed: the window's own buffer is handed over with the value's
    /// range in it (a large value is not copied again), and the window goes on in a new buffer.
    pub(super) fn take_value(&mut self) -> Result<Taken, Fallback> {
        if self.peek()?.is_none() {
            return Err(Fallback);
        }
        let n = self.value_end()?;
        Ok(self.hand_over(n))
    }

    /// The buffer, handed over with the next `n` bytes' range in it (consumed); the window goes
    /// on in a new buffer.
    fn hand_over(&mut self, n: usize) -> Taken {
        let range = self.pos..self.pos + n;
        let mut rest = Vec::with_capacity(2 * CHUNK);
        rest.extend_from_slice(&self.buf[range.end..]);
        let taken = std::mem::replace(&mut self.buf, rest);
        self.base += range.end as u64;
        self.pos = 0;
        (taken, range)
    }

    /// When the next value is a top-level object in a file written with indentation: the line
    /// that closes it (a newline, the top-level keys' indentation, `}`). Every line inside it is
    /// indented deeper, so its first occurrence ends the value; the caller parses the bytes as
    /// exactly one value, which proves the end (a prefix of an object that is a whole value ends
    /// at the object's own brace).
    fn indented_object(&mut self) -> Result<Option<Vec<u8>>, Fallback> {
        let Some(indent) = self.indent else {
            return Ok(None);
        };
        if self.peek()? != Some(b'{') {
            return Ok(None);
        }
        if self.buf.len() < self.pos + 2 {
            self.fill()?;
        }
        if self.buf.get(self.pos + 1) != Some(&b'\n') {
            return Ok(None);
        }
        Ok(Some(closing_line(indent, b'}')))
    }

    /// `take_value` of an `indented_object`, found without scanning its structure; `None`
    /// (nothing consumed) for any other layout.
    pub(super) fn take_indented_object(&mut self) -> Result<Option<Taken>, Fallback> {
        let Some(closing) = self.indented_object()? else {
            return Ok(None);
        };
        Ok(self.closing_line(&closing)?.map(|end| self.hand_over(end)))
    }

    /// Offset (from `pos`) just past the first `closing` after the value's first byte, reading
    /// more as needed; `None` at the end of the file.
    fn closing_line(&mut self, closing: &[u8]) -> Result<Option<usize>, Fallback> {
        let finder = memchr::memmem::Finder::new(closing);
        // Where to search from, relative to the value's start (a fill may move the buffer).
        let mut from = 1;
        loop {
            let start = self.pos;
            if let Some(i) = finder.find(&self.buf[start + from..]) {
                return Ok(Some(from + i + closing.len()));
            }
            from = (self.buf.len() - start + 1)
                .saturating_sub(closing.len())
                .max(1);
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// The length of an `indented_object` at the window's position in `src` (the window's own
    /// source, read at offsets), found by reading ahead through a small buffer; nothing consumed.
    pub(super) fn indented_object_len(
        &mut self,
        src: &dyn ReadAt,
    ) -> Result<Option<u64>, Fallback> {
        let Some(closing) = self.indented_object()? else {
            return Ok(None);
        };
        let finder = memchr::memmem::Finder::new(&closing);
        let start = self.position();
        let mut buf = vec![0u8; CHUNK];
        // Each read starts where the last one ended less what could begin a match.
        let mut at = start + 1;
        loop {
            let n = src.read_at(&mut buf, at).map_err(|_| Fallback)?;
            if let Some(i) = finder.find(&buf[..n]) {
                return Ok(Some(at + (i + closing.len()) as u64 - start));
            }
            if n < buf.len() {
                return Ok(None);
            }
            at += (n + 1 - closing.len()) as u64;
        }
    }
}

/// A newline, `indent` spaces and `close`: the line that ends a list or object written by
/// `json.dump(..., indent=...)` whose first line is at that indentation.
fn closing_line(indent: usize, close: u8) -> Vec<u8> {
    let mut line = vec![b'\n'];
    line.extend(std::iter::repeat_n(b' ', indent));
    line.push(close);
    line
}

impl<R: Forward> Window<R> {
    /// Move on to stream offset `to` (not before the next unconsumed byte), without reading what
    /// lies between.
    pub(super) fn forward_to(&mut self, to: u64) -> Result<(), Fallback> {
        let end = self.base + self.buf.len() as u64;
        if to < self.position() {
            return Err(Fallback);
        }
        if to <= end {
            self.pos = (to - self.base) as usize;
            return Ok(());
        }
        self.reader.forward(to - end).map_err(|_| Fallback)?;
        self.buf.clear();
        self.pos = 0;
        self.base = to;
        Ok(())
    }
}
