//! One bitmap of deleted positions per data file: its deletion vector, or the union of its
//! position delete files (`scan::deletes` caches them, since every view of a file needs it).

use roaring::RoaringTreemap;

use super::dv::decode_deletion_vector;
use super::file_ref::DeleteFileRef;
use super::position::read_position_deletes;
use super::puffin::{check_dv_listed, footer_payload_size, parse_footer};
use crate::io::TableIo;
use crate::spec::DataFile;
use crate::warning::{Rule, Subject, Warning};

/// Reads deletion vector `f` (a Puffin `deletion-vector-v1` blob at its manifest entry's
/// `content_offset` + `content_size_in_bytes`) as the set of deleted positions, with the
/// warnings its Puffin footer gave. Errors: a blob that fails validation (length, magic, CRC,
/// keys), a cardinality that differs from the manifest's `record_count`, an unreadable file. The
/// footer is checked but not needed (the manifest addresses the blob, which carries its own
/// length, magic and CRC): a missing or disagreeing footer is a warning, as Iceberg Java never
/// reads it.
pub async fn load_deletion_vector(
    io: &TableIo,
    f: &DataFile,
) -> crate::Result<(RoaringTreemap, Vec<Warning>)> {
    let shown = io.shown(&f.file_path);
    let (Some(offset), Some(len)) = (f.content_offset, f.content_size_in_bytes) else {
        return Err(crate::Error::dv(
            &shown,
            "deletion vector without content_offset/content_size_in_bytes",
        ));
    };
    if offset < 0 || len < 0 {
        return Err(crate::Error::dv(
            &shown,
            format!("negative blob range {offset}+{len}"),
        ));
    }
    // The footer and the blob are fetched at once: one round trip less before the first row.
    let (footer, blob) = futures::join!(
        check_footer(io, f, &shown),
        io.read_range(&f.file_path, offset as u64, len as u64)
    );
    let warnings = match footer {
        Ok(()) => Vec::new(),
        Err(crate::Error::DeletionVector { path, reason }) => vec![Warning::new(
            Rule::PuffinFooter,
            Subject::DeletionVector,
            path,
            format!("{reason} (spec: Puffin \"File structure\")"),
        )],
        Err(crate::Error::Unsupported(reason)) => vec![Warning::new(
            Rule::PuffinFooter,
            Subject::DeletionVector,
            &shown,
            reason,
        )],
        Err(e) => return Err(e),
    };
    let blob = blob?;
    let bitmap = crate::guard::catch(
        || decode_deletion_vector(&blob, &shown),
        |m| crate::Error::dv(&shown, format!("decoder panicked: {m}")),
    )?;
    if bitmap.len() != f.record_count as u64 {
        return Err(crate::Error::dv(
            &shown,
            format!(
                "blob at offset {offset} holds {} positions but the manifest records {}",
                bitmap.len(),
                f.record_count
            ),
        ));
    }
    Ok((bitmap, warnings))
}

/// The positions of data file `data_path` deleted by the V2 position delete files `files`
/// together. Errors: an unreadable or malformed position delete file.
pub async fn union_position_deletes(
    io: &TableIo,
    files: &[DeleteFileRef],
    data_path: &str,
) -> crate::Result<RoaringTreemap> {
    let mut out = RoaringTreemap::new();
    for d in files {
        read_position_deletes(io, &d.file, data_path, &mut out).await?;
    }
    Ok(out)
}

/// Checks that `bitmap` (from the delete file shown as `shown`) deletes no position past the
/// end of `data_file`.
pub fn check_in_range(
    bitmap: &RoaringTreemap,
    data_file: &DataFile,
    shown: &str,
) -> crate::Result<()> {
    if let Some(max) = bitmap.max() {
        if max >= data_file.record_count as u64 {
            return Err(crate::Error::dv(
                shown,
                format!(
                    "deletes position {max} but data file {} has {} rows",
                    data_file.file_path, data_file.record_count
                ),
            ));
        }
    }
    Ok(())
}

/// Bytes read from the end of a Puffin file to find its footer.
const PUFFIN_TAIL: u64 = 16 << 10;

/// Reads the Puffin footer of DV `f` and checks that it lists the blob the manifest points
/// at, for the same data file and cardinality.
async fn check_footer(io: &TableIo, f: &DataFile, shown: &str) -> crate::Result<()> {
    // The object's real size, not the manifest's file_size_in_bytes: a footer is never read
    // at a wrong offset.
    // A tail of 16 KiB holds the whole footer of most Puffin files: one request, not two.
    let (tail, size) = io.tail(&f.file_path, PUFFIN_TAIL).await?;
    if size < 12 {
        return Err(crate::Error::dv(
            shown,
            format!("{size} bytes is too small for a Puffin file"),
        ));
    }
    let payload = footer_payload_size(&tail, size, shown)?;
    let footer_len = payload + 16;
    if footer_len > io.limits().footer_bytes {
        return Err(crate::io::limits::Capped::Footer.too_large(shown, io.limits()));
    }
    let footer = if footer_len <= tail.len() as u64 {
        tail.slice(tail.len() - footer_len as usize..)
    } else {
        io.read_range(&f.file_path, size - footer_len, footer_len)
            .await?
    };
    let blobs = crate::guard::catch(
        || parse_footer(&footer, shown),
        |m| crate::Error::dv(shown, format!("Puffin footer parser panicked: {m}")),
    )?;
    check_dv_listed(
        &blobs,
        f.content_offset.unwrap_or(-1),
        f.content_size_in_bytes.unwrap_or(-1),
        f.referenced_data_file.as_deref().unwrap_or_default(),
        f.record_count,
        shown,
        &|named| {
            let data = f.referenced_data_file.as_deref().unwrap_or_default();
            io.shown(named) == io.shown(data)
        },
    )
}
