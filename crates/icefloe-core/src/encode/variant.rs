//! TEMPORARY placeholder, replaced by the encode branch.
use arrow::array::{BinaryArray, StringArray};
use arrow::buffer::NullBuffer;
pub fn variant_array_to_json(_m: &BinaryArray, _v: &BinaryArray, _n: Option<&NullBuffer>) -> crate::Result<StringArray> {
    Err(crate::Error::Output("not yet".into()))
}
