//! Small helpers over `pg_sys`: building Datums of varlena types and arrays, calling type
//! input functions, catalog lookups and quoting.

use std::ffi::{CStr, CString};
use std::os::raw::c_char;

use pgrx::pg_sys::{self, Datum, Oid};

use crate::convert::ArrayPlan;
use crate::error::FdwError;
use crate::options::OptionList;

/// The nodes of a Postgres `List` of pointers (empty for a null list, Postgres' `NIL`).
///
/// # Safety
/// `list` must be null or a valid pointer list.
pub unsafe fn list_nodes(list: *mut pg_sys::List) -> Vec<*mut pg_sys::Node> {
    if list.is_null() {
        return Vec::new();
    }
    (0..(*list).length)
        .map(|i| pg_sys::list_nth(list, i) as *mut pg_sys::Node)
        .collect()
}

/// A type's input function, prepared once: text → Datum.
#[derive(Clone)]
pub struct InputFn {
    finfo: Box<pg_sys::FmgrInfo>,
    ioparam: Oid,
    typmod: i32,
}

impl std::fmt::Debug for InputFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputFn")
            .field("ioparam", &self.ioparam)
            .field("typmod", &self.typmod)
            .finish()
    }
}

impl InputFn {
    /// The input function of `typid`, applying `typmod`.
    pub fn new(typid: Oid, typmod: i32) -> InputFn {
        let mut func = pg_sys::InvalidOid;
        let mut ioparam = pg_sys::InvalidOid;
        // SAFETY: catalog lookups; FmgrInfo is plain data filled in by fmgr_info.
        unsafe {
            pg_sys::getTypeInputInfo(typid, &mut func, &mut ioparam);
            let mut finfo: Box<pg_sys::FmgrInfo> = Box::new(std::mem::zeroed());
            pg_sys::fmgr_info_cxt(func, finfo.as_mut(), pg_sys::TopMemoryContext);
            InputFn {
                finfo,
                ioparam,
                typmod,
            }
        }
    }

    /// Converts `text` with the input function (errors are Postgres ERRORs of that type).
    pub fn call(&mut self, text: &[u8]) -> Result<Datum, FdwError> {
        let c =
            CString::new(text).map_err(|_| FdwError::Internal("value holds a NUL byte".into()))?;
        // SAFETY: the C string outlives the call, which copies what it keeps.
        Ok(unsafe {
            pg_sys::InputFunctionCall(
                self.finfo.as_mut(),
                c.as_ptr() as *mut c_char,
                self.ioparam,
                self.typmod,
            )
        })
    }
}

/// Whether the database encoding is UTF-8 (Iceberg strings need no conversion).
pub fn database_is_utf8() -> bool {
    // SAFETY: reads a backend global.
    unsafe { pg_sys::GetDatabaseEncoding() == pg_sys::pg_enc::PG_UTF8 as i32 }
}

/// A `text` Datum holding UTF-8 `bytes`, converted to the database encoding if that differs.
pub fn text_datum(bytes: &[u8]) -> Datum {
    // SAFETY: cstring_to_text_with_len copies `len` bytes; pg_any_to_server returns either the
    // input or a palloc'd NUL-terminated conversion.
    unsafe {
        if pg_sys::GetDatabaseEncoding() == pg_sys::pg_enc::PG_UTF8 as i32 {
            Datum::from(pg_sys::cstring_to_text_with_len(
                bytes.as_ptr() as *const c_char,
                bytes.len() as i32,
            ))
        } else {
            let conv = pg_sys::pg_any_to_server(
                bytes.as_ptr() as *const c_char,
                bytes.len() as i32,
                pg_sys::pg_enc::PG_UTF8 as i32,
            );
            if conv as *const u8 == bytes.as_ptr() {
                Datum::from(pg_sys::cstring_to_text_with_len(conv, bytes.len() as i32))
            } else {
                Datum::from(pg_sys::cstring_to_text(conv))
            }
        }
    }
}

/// The UTF-8 text of a `text`/`varchar` Datum in the database encoding (Iceberg strings and
/// their bounds are UTF-8); `None` if it has no UTF-8 form.
pub fn text_to_utf8(d: Datum) -> Option<String> {
    // SAFETY: detoasts a text Datum; pg_server_to_any returns the input or a palloc'd
    // NUL-terminated conversion (or raises an ERROR for bytes invalid in the encoding).
    unsafe {
        let v = pg_sys::pg_detoast_datum_packed(d.cast_mut_ptr());
        let len = pgrx::varlena::varsize_any_exhdr(v);
        let data = pgrx::varlena::vardata_any(v) as *const c_char;
        let bytes = std::slice::from_raw_parts(data as *const u8, len);
        if pg_sys::GetDatabaseEncoding() == pg_sys::pg_enc::PG_UTF8 as i32 {
            return std::str::from_utf8(bytes).ok().map(str::to_string);
        }
        if pg_sys::GetDatabaseEncoding() == pg_sys::pg_enc::PG_SQL_ASCII as i32 {
            // No known encoding: only ASCII means the same in UTF-8.
            return bytes
                .is_ascii()
                .then(|| String::from_utf8_lossy(bytes).into_owned());
        }
        let conv = pg_sys::pg_server_to_any(data, len as i32, pg_sys::pg_enc::PG_UTF8 as i32);
        let out = if std::ptr::eq(conv, data) {
            bytes.to_vec()
        } else {
            CStr::from_ptr(conv).to_bytes().to_vec()
        };
        String::from_utf8(out).ok()
    }
}

/// A `bytea` Datum (same layout as text, no encoding).
pub fn bytea_datum(bytes: &[u8]) -> Datum {
    // SAFETY: copies `len` bytes into a new varlena.
    unsafe {
        Datum::from(pg_sys::cstring_to_text_with_len(
            bytes.as_ptr() as *const c_char,
            bytes.len() as i32,
        ))
    }
}

/// Bytes in the hex form of bytea's input (`\x` then two lowercase digits per byte).
pub fn bytea_text(b: &[u8]) -> String {
    format!("\\x{}", hex::encode(b))
}

/// A `uuid` Datum (16 bytes, by reference).
pub fn uuid_datum(bytes: &[u8]) -> Datum {
    // SAFETY: palloc'd 16 bytes, fully written.
    unsafe {
        let p = pg_sys::palloc(16) as *mut u8;
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len().min(16));
        Datum::from(p)
    }
}

/// A one-dimensional array Datum of the given elements.
pub fn array_datum(datums: &mut [Datum], nulls: &mut [bool], plan: &ArrayPlan) -> Datum {
    // SAFETY: element Datums were made for `plan.elem_type`; lengths match.
    unsafe {
        if datums.is_empty() {
            return Datum::from(pg_sys::construct_empty_array(plan.elem_type));
        }
        let mut dims = [datums.len() as i32];
        let mut lbs = [1i32];
        Datum::from(pg_sys::construct_md_array(
            datums.as_mut_ptr(),
            nulls.as_mut_ptr(),
            1,
            dims.as_mut_ptr(),
            lbs.as_mut_ptr(),
            plan.elem_type,
            plan.elem_len as i32,
            plan.elem_byval,
            plan.elem_align,
        ))
    }
}

/// `typlen`, `typbyval` and `typalign` of a type.
pub fn typlenbyvalalign(typid: Oid) -> (i16, bool, c_char) {
    let (mut len, mut byval, mut align) = (0i16, false, 0 as c_char);
    // SAFETY: a catalog lookup into locals.
    unsafe { pg_sys::get_typlenbyvalalign(typid, &mut len, &mut byval, &mut align) };
    (len, byval, align)
}

/// An array's element type and its storage (`typlen`, `typbyval`, `typalign`), as
/// `deconstruct_array` and `construct_array` take them.
#[derive(Clone, Copy)]
pub struct ArrayElem {
    pub typid: Oid,
    pub len: i16,
    pub byval: bool,
    pub align: c_char,
}

/// The elements of array `d` (detoasted here) and whether each is NULL, with their type.
/// Elements not passed by value point into memory of the current memory context.
///
/// # Safety
/// `d` must be an array Datum.
pub unsafe fn array_elements(d: Datum) -> (Vec<Datum>, Vec<bool>, ArrayElem) {
    let arr = pg_sys::pg_detoast_datum(d.cast_mut_ptr()) as *mut pg_sys::ArrayType;
    let typid = (*arr).elemtype;
    let (len, byval, align) = typlenbyvalalign(typid);
    let mut values: *mut Datum = std::ptr::null_mut();
    let mut nulls: *mut bool = std::ptr::null_mut();
    let mut n: i32 = 0;
    pg_sys::deconstruct_array(
        arr,
        typid,
        len as i32,
        byval,
        align,
        &mut values,
        &mut nulls,
        &mut n,
    );
    let n = n.max(0) as usize;
    let elem = ArrayElem {
        typid,
        len,
        byval,
        align,
    };
    (
        (0..n).map(|i| *values.add(i)).collect(),
        (0..n).map(|i| *nulls.add(i)).collect(),
        elem,
    )
}

/// Parses a timestamptz with Postgres' input function: microseconds since 2000-01-01.
/// Invalid input raises Postgres' own ERROR.
pub fn parse_timestamptz(text: &str) -> Option<i64> {
    let mut f = InputFn::new(pg_sys::TIMESTAMPTZOID, -1);
    f.call(text.as_bytes()).ok().map(|d| d.value() as i64)
}

/// The SQL name of a type with its modifier (`numeric(9,2)`).
pub fn format_type(typid: Oid, typmod: i32) -> String {
    // SAFETY: returns a palloc'd C string.
    unsafe {
        CStr::from_ptr(pg_sys::format_type_with_typemod(typid, typmod))
            .to_string_lossy()
            .into_owned()
    }
}

/// An identifier quoted for SQL when needed.
pub fn quote_ident(name: &str) -> String {
    match CString::new(name) {
        // SAFETY: quote_identifier returns its input or a palloc'd copy.
        Ok(c) => unsafe {
            CStr::from_ptr(pg_sys::quote_identifier(c.as_ptr()))
                .to_string_lossy()
                .into_owned()
        },
        Err(_) => format!("\"{}\"", name.replace('\0', "").replace('"', "\"\"")),
    }
}

/// A string literal quoted for SQL (`'it''s'`, or `E'...'` with backslashes).
pub fn quote_literal(value: &str) -> String {
    let body = value.replace('\0', "").replace('\'', "''");
    if body.contains('\\') {
        format!("E'{}'", body.replace('\\', "\\\\"))
    } else {
        format!("'{body}'")
    }
}

/// A role's name (its OID if it has none).
pub fn role_name(role: Oid) -> String {
    // SAFETY: returns a palloc'd C string or NULL.
    unsafe {
        let p = pg_sys::GetUserNameFromId(role, true);
        if p.is_null() {
            role.to_u32().to_string()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}

/// The options of the user mapping of `user` (or PUBLIC) on `server`; empty if there is none.
pub fn user_mapping_options(user: Oid, server: Oid) -> OptionList {
    // SAFETY: syscache lookups; tuples are released before returning.
    unsafe {
        for u in [user, pg_sys::InvalidOid] {
            let tup = pg_sys::SearchSysCache2(
                pg_sys::SysCacheIdentifier::USERMAPPINGUSERSERVER as i32,
                Datum::from(u),
                Datum::from(server),
            );
            if tup.is_null() {
                continue;
            }
            let mut isnull = false;
            let datum = pg_sys::SysCacheGetAttr(
                pg_sys::SysCacheIdentifier::USERMAPPINGUSERSERVER as i32,
                tup,
                pg_sys::Anum_pg_user_mapping_umoptions as pg_sys::AttrNumber,
                &mut isnull,
            );
            let opts = if isnull {
                Vec::new()
            } else {
                crate::options::read_def_list(pg_sys::untransformRelOptions(datum))
            };
            pg_sys::ReleaseSysCache(tup);
            return opts;
        }
        Vec::new()
    }
}
