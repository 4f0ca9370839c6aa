//! Streaming through the caller's callbacks: an encoder fed as data arrives, a decoder read as
//! data is wanted, and whole streams from a read callback to a write callback.

use std::ffi::{c_int, c_uint, c_void};
use std::io::{self, Read, Write};

use glyd_columnar::auto::SAMPLE;
use glyd_columnar::{detect, RecordWriter, WriteOptions, DEFAULT_ROW_GROUP};
use glyd_core::{Decoder, Encoder, Level, Options};

use crate::error::{self, fail, guard, GLYD_ERR_INPUT, GLYD_ERR_IO, GLYD_FLAG_RECORDS, GLYD_OK};
use crate::oneshot::level_of;

/// Reads up to `cap` bytes into `buf`; returns how many (0 only at the end of the input) or a
/// negative number on error.
pub type GlydReadFn =
    Option<unsafe extern "C" fn(user: *mut c_void, buf: *mut u8, cap: usize) -> isize>;

/// Writes `len` bytes from `buf`; returns how many it took (a short count is retried with the
/// rest) or a negative number on error.
pub type GlydWriteFn =
    Option<unsafe extern "C" fn(user: *mut c_void, buf: *const u8, len: usize) -> isize>;

/// A read callback as `io::Read`.
struct CallbackReader {
    f: unsafe extern "C" fn(*mut c_void, *mut u8, usize) -> isize,
    user: *mut c_void,
}

impl Read for CallbackReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: the caller gave a callback that reads at most `cap` bytes into `buf`, which
        // is valid for `buf.len()` bytes; `user` is theirs, passed back untouched.
        let n = unsafe { (self.f)(self.user, buf.as_mut_ptr(), buf.len()) };
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= buf.len())
            .ok_or_else(|| io::Error::other(format!("the read callback returned {n}")))
    }
}

/// A write callback as `io::Write`.
struct CallbackWriter {
    f: unsafe extern "C" fn(*mut c_void, *const u8, usize) -> isize,
    user: *mut c_void,
}

impl Write for CallbackWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for `buf.len()` bytes during the call; `user` is the caller's.
        let n = unsafe { (self.f)(self.user, buf.as_ptr(), buf.len()) };
        match usize::try_from(n) {
            Ok(0) if !buf.is_empty() => Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "the write callback took no bytes",
            )),
            Ok(n) if n <= buf.len() => Ok(n),
            _ => Err(io::Error::other(format!("the write callback returned {n}"))),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn io_error(e: io::Error) -> c_int {
    match e.downcast::<glyd_core::Error>() {
        Ok(c) => error::core(c),
        Err(e) => fail(GLYD_ERR_IO, e),
    }
}

/// Where an encoder's input goes: a frame, a record archive, or (record mode, before a sample
/// is in) memory.
enum Sink {
    Plain(Encoder<CallbackWriter>),
    Records(RecordWriter<CallbackWriter>),
    /// Record mode's first bytes, until `SAMPLE` of them choose the format (or the input ends,
    /// and the smaller of records and a plain frame is written). Parquet stays here whole.
    Sampling(Vec<u8>, CallbackWriter),
}

/// A streaming compressor: `glyd_encoder_new`, any number of `glyd_encoder_write`, then
/// `glyd_encoder_finish` (or `glyd_encoder_free` to abandon it). One thread at a time.
pub struct GlydEncoder {
    sink: Option<Sink>,
    level: Level,
    threads: usize,
}

impl GlydEncoder {
    fn write(&mut self, data: &[u8]) -> Result<(), c_int> {
        match self.sink.as_mut() {
            Some(Sink::Plain(e)) => e.write_all(data).map_err(io_error),
            Some(Sink::Records(w)) => w.write_all(data).map_err(io_error),
            Some(Sink::Sampling(buf, _)) => {
                buf.extend_from_slice(data);
                if buf.len() >= SAMPLE && !glyd_columnar::parquet::sniff(buf) {
                    self.choose()?;
                }
                Ok(())
            }
            None => Err(fail(
                GLYD_ERR_INPUT,
                "the encoder failed earlier or is finished",
            )),
        }
    }

    /// Record mode with a sample in: a record writer when it reads as records, else a frame.
    fn choose(&mut self) -> Result<(), c_int> {
        let Some(Sink::Sampling(sample, out)) = self.sink.take() else {
            return Ok(());
        };
        let opts = WriteOptions {
            level: self.level,
            threads: self.threads,
            row_group_size: DEFAULT_ROW_GROUP,
        };
        let sink = match detect(&sample[..SAMPLE.min(sample.len())], false) {
            Some(format) => {
                let mut w = RecordWriter::new(out, format, &opts).map_err(error::columnar)?;
                w.write_all(&sample).map_err(io_error)?;
                Sink::Records(w)
            }
            None => {
                let opts = Options::new(self.level).with_threads(self.threads);
                let mut e = Encoder::new(out, &opts).map_err(error::core)?;
                e.write_all(&sample).map_err(io_error)?;
                Sink::Plain(e)
            }
        };
        self.sink = Some(sink);
        Ok(())
    }

    fn finish(mut self) -> Result<(), c_int> {
        match self.sink.take() {
            Some(Sink::Plain(e)) => e.finish().map(drop).map_err(error::core),
            Some(Sink::Records(w)) => w.finish().map(drop).map_err(error::columnar),
            Some(Sink::Sampling(data, mut out)) => {
                let coded = glyd_columnar::auto::compress_records(&data, self.level, self.threads)
                    .map_err(error::columnar)?;
                out.write_all(&coded).map_err(io_error)
            }
            None => Err(fail(
                GLYD_ERR_INPUT,
                "the encoder failed earlier or is finished",
            )),
        }
    }
}

/// C: a streaming compressor writing through `write` (given `user` on each call). `level`: 0
/// (default) or 1..19; `threads`: 0 for every core; `flags`: 0 or `GLYD_FLAG_RECORDS`.
/// Returns null on a bad argument (see `glyd_last_error`).
///
/// # Safety
/// `write` must be safe to call with `user` until the encoder is finished or freed.
#[no_mangle]
pub unsafe extern "C" fn glyd_encoder_new(
    write: GlydWriteFn,
    user: *mut c_void,
    level: c_int,
    threads: c_uint,
    flags: c_uint,
) -> *mut GlydEncoder {
    let mut made = None;
    guard(|| {
        let Some(f) = write else {
            return fail(
                GLYD_ERR_INPUT,
                "glyd_encoder_new: the write callback is null",
            );
        };
        if flags & !GLYD_FLAG_RECORDS != 0 {
            return fail(GLYD_ERR_INPUT, format!("unknown flags {flags:#x}"));
        }
        let level = match level_of(level) {
            Ok(l) => l,
            Err(code) => return code,
        };
        let threads = threads as usize;
        let out = CallbackWriter { f, user };
        let sink = if flags & GLYD_FLAG_RECORDS != 0 {
            Sink::Sampling(Vec::new(), out)
        } else {
            match Encoder::new(out, &Options::new(level).with_threads(threads)) {
                Ok(e) => Sink::Plain(e),
                Err(e) => return error::core(e),
            }
        };
        made = Some(Box::new(GlydEncoder {
            sink: Some(sink),
            level,
            threads,
        }));
        GLYD_OK
    });
    made.map_or(std::ptr::null_mut(), Box::into_raw)
}

/// C: gives the encoder `len` bytes at `src`; coded output goes to the write callback as it
/// is ready. After an error the encoder only accepts `glyd_encoder_free`.
///
/// # Safety
/// `enc` from `glyd_encoder_new`, not yet finished or freed; `src` valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn glyd_encoder_write(
    enc: *mut GlydEncoder,
    src: *const u8,
    len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: `enc` is a live encoder used by this thread only (the contract).
        let Some(enc) = (unsafe { enc.as_mut() }) else {
            return fail(GLYD_ERR_INPUT, "glyd_encoder_write: the encoder is null");
        };
        if len == 0 {
            return GLYD_OK;
        }
        if src.is_null() {
            return fail(
                GLYD_ERR_INPUT,
                "glyd_encoder_write: a null src with a nonzero length",
            );
        }
        // SAFETY: `src` is non-null and valid for `len` bytes (the contract).
        let data = unsafe { std::slice::from_raw_parts(src, len) };
        match enc.write(data) {
            Ok(()) => GLYD_OK,
            Err(code) => {
                enc.sink = None;
                code
            }
        }
    })
}

/// C: writes the rest of the stream (its index and footer) and frees the encoder, whatever
/// the result.
///
/// # Safety
/// `enc` from `glyd_encoder_new`, not yet finished or freed; not used after this call.
#[no_mangle]
pub unsafe extern "C" fn glyd_encoder_finish(enc: *mut GlydEncoder) -> c_int {
    if enc.is_null() {
        return fail(GLYD_ERR_INPUT, "glyd_encoder_finish: the encoder is null");
    }
    // SAFETY: `enc` came from `Box::into_raw` in `glyd_encoder_new` and is given back once.
    let enc = unsafe { Box::from_raw(enc) };
    guard(|| match enc.finish() {
        Ok(()) => GLYD_OK,
        Err(code) => code,
    })
}

/// C: frees an encoder without finishing it (what it wrote is an incomplete stream).
///
/// # Safety
/// `enc` null, or from `glyd_encoder_new` and not yet finished or freed.
#[no_mangle]
pub unsafe extern "C" fn glyd_encoder_free(enc: *mut GlydEncoder) {
    if !enc.is_null() {
        // SAFETY: as for `glyd_encoder_finish`.
        drop(unsafe { Box::from_raw(enc) });
    }
}

/// A streaming decompressor of glyd frames: `glyd_decoder_new`, `glyd_decoder_read` until it
/// returns 0 bytes, `glyd_decoder_free`. One thread at a time.
pub struct GlydDecoder {
    decoder: Decoder<CallbackReader>,
    failed: bool,
}

/// C: a streaming decompressor reading glyd frames through `read` (given `user`), decoding on
/// `threads` threads (0: every core). Record archives are rebuilt by
/// `glyd_decompress_stream` or `glyd_decompress`.
///
/// # Safety
/// `read` must be safe to call with `user` until the decoder is freed.
#[no_mangle]
pub unsafe extern "C" fn glyd_decoder_new(
    read: GlydReadFn,
    user: *mut c_void,
    threads: c_uint,
) -> *mut GlydDecoder {
    let Some(f) = read else {
        fail(
            GLYD_ERR_INPUT,
            "glyd_decoder_new: the read callback is null",
        );
        return std::ptr::null_mut();
    };
    let decoder = Decoder::with_threads(CallbackReader { f, user }, threads as usize);
    Box::into_raw(Box::new(GlydDecoder {
        decoder,
        failed: false,
    }))
}

/// C: fills up to `cap` bytes of `dst` with decoded bytes; their count goes to `*written`
/// (0 at the end of the stream).
///
/// # Safety
/// `dec` from `glyd_decoder_new` and not freed; `dst` valid for `cap` bytes; `written` valid.
#[no_mangle]
pub unsafe extern "C" fn glyd_decoder_read(
    dec: *mut GlydDecoder,
    dst: *mut u8,
    cap: usize,
    written: *mut usize,
) -> c_int {
    guard(|| {
        // SAFETY: `dec` is a live decoder used by this thread only (the contract).
        let Some(dec) = (unsafe { dec.as_mut() }) else {
            return fail(GLYD_ERR_INPUT, "glyd_decoder_read: the decoder is null");
        };
        if written.is_null() || (dst.is_null() && cap > 0) {
            return fail(
                GLYD_ERR_INPUT,
                "glyd_decoder_read: dst and written must not be null",
            );
        }
        if dec.failed {
            return fail(GLYD_ERR_INPUT, "the decoder failed earlier: free it");
        }
        let out: &mut [u8] = if cap == 0 {
            &mut []
        } else {
            // SAFETY: `dst` is non-null and valid for `cap` bytes (the contract).
            unsafe { std::slice::from_raw_parts_mut(dst, cap) }
        };
        let mut n = 0;
        while n < out.len() {
            match dec.decoder.read(&mut out[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    dec.failed = true;
                    return io_error(e);
                }
            }
        }
        // SAFETY: `written` is valid and non-null (checked above).
        unsafe { *written = n };
        GLYD_OK
    })
}

/// C: frees a decoder.
///
/// # Safety
/// `dec` null, or from `glyd_decoder_new` and not yet freed.
#[no_mangle]
pub unsafe extern "C" fn glyd_decoder_free(dec: *mut GlydDecoder) {
    if !dec.is_null() {
        // SAFETY: `dec` came from `Box::into_raw` in `glyd_decoder_new`, given back once.
        drop(unsafe { Box::from_raw(dec) });
    }
}

/// C: compresses everything `read` gives to `write`, as `glyd_encoder_*` would.
///
/// # Safety
/// The callbacks must be safe to call with their `user` pointers during this call.
#[no_mangle]
pub unsafe extern "C" fn glyd_compress_stream(
    read: GlydReadFn,
    read_user: *mut c_void,
    write: GlydWriteFn,
    write_user: *mut c_void,
    level: c_int,
    threads: c_uint,
    flags: c_uint,
) -> c_int {
    let Some(r) = read else {
        return fail(
            GLYD_ERR_INPUT,
            "glyd_compress_stream: the read callback is null",
        );
    };
    // SAFETY: the write callback's promise is this function's.
    let enc = unsafe { glyd_encoder_new(write, write_user, level, threads, flags) };
    if enc.is_null() {
        return GLYD_ERR_INPUT;
    }
    let mut reader = CallbackReader {
        f: r,
        user: read_user,
    };
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // SAFETY: `enc` is live and not used again.
                unsafe { glyd_encoder_free(enc) };
                return fail(GLYD_ERR_IO, e);
            }
        };
        // SAFETY: `enc` is live; `buf` holds `n` bytes.
        let code = unsafe { glyd_encoder_write(enc, buf.as_ptr(), n) };
        if code != GLYD_OK {
            // SAFETY: `enc` is live and not used again.
            unsafe { glyd_encoder_free(enc) };
            return code;
        }
    }
    // SAFETY: `enc` is live and given up here.
    unsafe { glyd_encoder_finish(enc) }
}

/// C: decodes everything `read` gives (glyd frames, or a record archive, rebuilt byte for
/// byte) to `write`, on `threads` threads (0: every core).
///
/// # Safety
/// As `glyd_compress_stream`.
#[no_mangle]
pub unsafe extern "C" fn glyd_decompress_stream(
    read: GlydReadFn,
    read_user: *mut c_void,
    write: GlydWriteFn,
    write_user: *mut c_void,
    threads: c_uint,
) -> c_int {
    guard(|| {
        let (Some(r), Some(w)) = (read, write) else {
            return fail(GLYD_ERR_INPUT, "glyd_decompress_stream: a callback is null");
        };
        let mut reader = CallbackReader {
            f: r,
            user: read_user,
        };
        let mut out = CallbackWriter {
            f: w,
            user: write_user,
        };
        // The first bytes say which: a record archive's magic, or a frame's.
        let mut head = Vec::with_capacity(8);
        while head.len() < 8 {
            let mut b = [0u8; 8];
            match reader.read(&mut b[..8 - head.len()]) {
                Ok(0) => break,
                Ok(n) => head.extend_from_slice(&b[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return fail(GLYD_ERR_IO, e),
            }
        }
        let input = head.as_slice().chain(reader);
        if glyd_columnar::is_archive(&head) {
            return match glyd_columnar::rebuild(input, &mut out) {
                Ok(_) => GLYD_OK,
                Err(e) => error::columnar(e),
            };
        }
        let mut decoder = Decoder::with_threads(input, threads as usize);
        match io::copy(&mut decoder, &mut out) {
            Ok(_) => GLYD_OK,
            Err(e) => io_error(e),
        }
    })
}
