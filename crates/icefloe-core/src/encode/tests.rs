//! Tests of the encoders over one batch holding every type of the schema contract, and of the
//! variant decoder against the `v3_variant` fixture table.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int32Array, Int32Builder, Int64Array, ListArray, ListBuilder,
    MapBuilder, NullArray, StringArray, StringBuilder, StructArray, Time64MicrosecondArray,
    TimestampMicrosecondArray, TimestampNanosecondArray,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, Fields, Int32Type, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;

use super::value::{value_to_json, ColumnEncoder, Flavor};
use super::{CsvWriter, JsonLinesWriter, ParquetWriter};

fn fid(name: &str, dt: DataType, id: i32) -> Field {
    Field::new(name, dt, true).with_metadata(HashMap::from([(
        "PARQUET:field_id".to_string(),
        id.to_string(),
    )]))
}

fn typed(f: Field, iceberg_type: &str) -> Field {
    let mut m = f.metadata().clone();
    m.insert("iceberg.type".to_string(), iceberg_type.to_string());
    f.with_metadata(m)
}

/// Four rows: ordinary values, edge values, all NULL, more edge values.
pub(super) fn all_types_batch() -> RecordBatch {
    let utc: Option<Arc<str>> = Some("+00:00".into());
    let st_fields = Fields::from(vec![
        fid("x", DataType::Int32, 20),
        fid("y", DataType::Utf8, 21),
    ]);
    let st = StructArray::new(
        st_fields.clone(),
        vec![
            Arc::new(Int32Array::from(vec![Some(0), Some(1), None, Some(2)])) as ArrayRef,
            Arc::new(StringArray::from(vec![None, Some("y1"), None, Some("a,b")])),
        ],
        Some(NullBuffer::from(vec![true, true, false, true])),
    );
    let lst = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![]),
        Some(vec![Some(100)]),
        None,
        Some(vec![Some(200), None]),
    ]);
    let mut mb = MapBuilder::new(
        None,
        StringBuilder::new(),
        arrow::array::Float64Builder::new(),
    );
    mb.keys().append_value("b");
    mb.values().append_value(0.5);
    mb.keys().append_value("a");
    mb.values().append_null();
    mb.append(true).unwrap();
    mb.keys().append_value("a");
    mb.values().append_value(1.0);
    mb.append(true).unwrap();
    mb.append(false).unwrap();
    mb.append(true).unwrap();
    let mp = mb.finish();
    // map<int, list<int>>: keys sorted by their JSON text ("10" < "9")
    let mut mb2 = MapBuilder::new(
        None,
        Int32Builder::new(),
        ListBuilder::new(Int32Builder::new()),
    );
    for (k, v) in [(9, vec![Some(1)]), (10, vec![]), (-1, vec![None])] {
        mb2.keys().append_value(k);
        mb2.values().append_value(v);
    }
    mb2.append(true).unwrap();
    mb2.append(true).unwrap();
    mb2.append(false).unwrap();
    mb2.keys().append_value(3);
    mb2.values().append_null();
    mb2.append(true).unwrap();
    let mp2 = mb2.finish();
    // list<struct<x int, y string>>
    let ls_fields = st_fields.clone();
    let ls_values = StructArray::new(
        ls_fields.clone(),
        vec![
            Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])) as ArrayRef,
            Arc::new(StringArray::from(vec![Some("p"), Some("q"), None])),
        ],
        Some(NullBuffer::from(vec![true, true, false])),
    );
    let ls_item = Arc::new(fid("element", DataType::Struct(ls_fields), 31));
    let ls = ListArray::new(
        ls_item.clone(),
        arrow::buffer::OffsetBuffer::new(vec![0, 2, 2, 2, 3].into()),
        Arc::new(ls_values),
        Some(NullBuffer::from(vec![true, true, false, true])),
    );
    let uuid = FixedSizeBinaryArray::try_from_sparse_iter_with_size(
        vec![
            Some(vec![
                0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4d, 0x67, 0xb3, 0xa2, 0xa7, 0xd9, 0xe8, 0xb1,
                0xc2, 0xd3,
            ]),
            Some(vec![0; 16]),
            None,
            Some(vec![0xff; 16]),
        ]
        .into_iter(),
        16,
    )
    .unwrap();
    let fx = FixedSizeBinaryArray::try_from_sparse_iter_with_size(
        vec![
            Some(vec![1u8, 2, 3, 4]),
            Some(vec![0, 0, 0, 0]),
            None,
            Some(vec![0xff, 0x00, 0x80, 0x7f]),
        ]
        .into_iter(),
        4,
    )
    .unwrap();

    let fields = vec![
        fid("id", DataType::Int64, 1),
        fid("_row_id", DataType::Int64, 2147483540),
        fid("b", DataType::Boolean, 2),
        fid("i", DataType::Int32, 3),
        fid("l", DataType::Int64, 4),
        fid("f", DataType::Float32, 5),
        fid("d", DataType::Float64, 6),
        fid("dec", DataType::Decimal128(9, 2), 7),
        fid("dec38", DataType::Decimal128(38, 10), 8),
        fid("dt", DataType::Date32, 9),
        fid("tm", DataType::Time64(TimeUnit::Microsecond), 10),
        fid("ts", DataType::Timestamp(TimeUnit::Microsecond, None), 11),
        fid(
            "tstz",
            DataType::Timestamp(TimeUnit::Microsecond, utc.clone()),
            12,
        ),
        fid("ts_ns", DataType::Timestamp(TimeUnit::Nanosecond, None), 13),
        fid(
            "tstz_ns",
            DataType::Timestamp(TimeUnit::Nanosecond, utc.clone()),
            14,
        ),
        fid("s", DataType::Utf8, 15),
        typed(fid("u", DataType::FixedSizeBinary(16), 16), "uuid"),
        fid("fx", DataType::FixedSizeBinary(4), 17),
        fid("bin", DataType::Binary, 18),
        typed(fid("geom", DataType::Binary, 19), "geometry"),
        fid("st", DataType::Struct(st_fields), 22),
        fid("lst", lst.data_type().clone(), 23),
        fid("mp", mp.data_type().clone(), 24),
        fid("mp2", mp2.data_type().clone(), 25),
        fid("ls", DataType::List(ls_item), 26),
        typed(fid("v", DataType::Utf8, 27), "variant"),
        fid("unk", DataType::Null, 28),
    ];
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![0, 1, 2, 3])),
        Arc::new(Int64Array::from(vec![100, 101, 102, 103])),
        Arc::new(BooleanArray::from(vec![
            Some(true),
            Some(false),
            None,
            Some(true),
        ])),
        Arc::new(Int32Array::from(vec![
            Some(1),
            Some(i32::MIN),
            None,
            Some(i32::MAX),
        ])),
        Arc::new(Int64Array::from(vec![
            Some(1234567890123),
            Some(i64::MIN),
            None,
            Some(i64::MAX),
        ])),
        Arc::new(Float32Array::from(vec![
            Some(f32::MAX),
            Some(f32::NAN),
            None,
            Some(-0.0),
        ])),
        Arc::new(Float64Array::from(vec![
            Some(2.3333333333333335),
            Some(f64::INFINITY),
            None,
            Some(f64::NEG_INFINITY),
        ])),
        Arc::new(
            Decimal128Array::from(vec![Some(123), Some(-1), None, Some(0)])
                .with_precision_and_scale(9, 2)
                .unwrap(),
        ),
        Arc::new(
            Decimal128Array::from(vec![
                Some(0),
                Some(-10000000001),
                None,
                Some(99999999999999999999999999999999999999),
            ])
            .with_precision_and_scale(38, 10)
            .unwrap(),
        ),
        Arc::new(Date32Array::from(vec![
            Some(19737),
            Some(-1),
            None,
            Some(-25567),
        ])),
        Arc::new(Time64MicrosecondArray::from(vec![
            Some(45_296_789_012),
            Some(0),
            None,
            Some(86_399_999_999),
        ])),
        Arc::new(TimestampMicrosecondArray::from(vec![
            Some(1_705_322_096_789_012),
            Some(-1),
            None,
            Some(-2_208_988_800_000_000),
        ])),
        Arc::new(
            TimestampMicrosecondArray::from(vec![
                Some(1_705_322_096_789_012),
                Some(-1),
                None,
                Some(9_223_372_036_854_775),
            ])
            .with_timezone("+00:00"),
        ),
        Arc::new(TimestampNanosecondArray::from(vec![
            Some(1_704_164_645_123_456_789),
            Some(i64::MIN),
            None,
            Some(i64::MAX),
        ])),
        Arc::new(
            TimestampNanosecondArray::from(vec![
                Some(1_704_164_645_123_456_789),
                Some(i64::MIN),
                None,
                Some(i64::MAX),
            ])
            .with_timezone("+00:00"),
        ),
        Arc::new(StringArray::from(vec![
            Some("hello"),
            Some(""),
            None,
            Some("unicode ✓ \"quoted\" \\ back\nnewline, comma"),
        ])),
        Arc::new(uuid),
        Arc::new(fx),
        Arc::new(BinaryArray::from(vec![
            Some(&[0xde, 0xad][..]),
            Some(&[][..]),
            None,
            Some(&[0x00, 0x0a, 0x0d][..]),
        ])),
        Arc::new(BinaryArray::from(vec![
            Some(&[0x01, 0x01, 0x00, 0x00, 0x00][..]),
            None,
            None,
            None,
        ])),
        Arc::new(st),
        Arc::new(lst),
        Arc::new(mp),
        Arc::new(mp2),
        Arc::new(ls),
        Arc::new(StringArray::from(vec![
            Some(r#"{"a":0,"b":"str0","c":[1,null,2.5],"d":{"e":true}}"#),
            Some(r#""plain, string""#),
            None,
            Some("null"),
        ])),
        Arc::new(NullArray::new(4)),
    ];
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

const JSONL: [&str; 4] = [
    concat!(
        r#"{"id":0,"_row_id":100,"b":true,"i":1,"l":1234567890123,"f":3.4028234663852886e+38,"#,
        r#""d":2.3333333333333335,"dec":"1.23","dec38":"0.0000000000","dt":"2024-01-15","#,
        r#""tm":"12:34:56.789012","ts":"2024-01-15T12:34:56.789012","#,
        r#""tstz":"2024-01-15T12:34:56.789012+00:00","ts_ns":"2024-01-02T03:04:05.123456789","#,
        r#""tstz_ns":"2024-01-02T03:04:05.123456789+00:00","s":"hello","#,
        r#""u":"f79c3e09-677c-4d67-b3a2-a7d9e8b1c2d3","fx":"01020304","bin":"dead","#,
        r#""geom":"0101000000","st":{"x":0,"y":null},"lst":[],"#,
        r#""mp":[{"key":"a","value":null},{"key":"b","value":0.5}],"#,
        r#""mp2":[{"key":-1,"value":[null]},{"key":10,"value":[]},{"key":9,"value":[1]}],"#,
        r#""ls":[{"x":1,"y":"p"},{"x":null,"y":"q"}],"#,
        r#""v":{"a":0,"b":"str0","c":[1,null,2.5],"d":{"e":true}},"unk":null}"#
    ),
    concat!(
        r#"{"id":1,"_row_id":101,"b":false,"i":-2147483648,"l":-9223372036854775808,"f":"NaN","#,
        r#""d":"Infinity","dec":"-0.01","dec38":"-1.0000000001","dt":"1969-12-31","#,
        r#""tm":"00:00:00.000000","ts":"1969-12-31T23:59:59.999999","#,
        r#""tstz":"1969-12-31T23:59:59.999999+00:00","ts_ns":"1677-09-21T00:12:43.145224192","#,
        r#""tstz_ns":"1677-09-21T00:12:43.145224192+00:00","s":"","#,
        r#""u":"00000000-0000-0000-0000-000000000000","fx":"00000000","bin":"","#,
        r#""geom":null,"st":{"x":1,"y":"y1"},"lst":[100],"mp":[{"key":"a","value":1.0}],"#,
        r#""mp2":[],"ls":[],"v":"plain, string","unk":null}"#
    ),
    concat!(
        r#"{"id":2,"_row_id":102,"b":null,"i":null,"l":null,"f":null,"d":null,"dec":null,"#,
        r#""dec38":null,"dt":null,"tm":null,"ts":null,"tstz":null,"ts_ns":null,"tstz_ns":null,"#,
        r#""s":null,"u":null,"fx":null,"bin":null,"geom":null,"st":null,"lst":null,"mp":null,"#,
        r#""mp2":null,"ls":null,"v":null,"unk":null}"#
    ),
    concat!(
        r#"{"id":3,"_row_id":103,"b":true,"i":2147483647,"l":9223372036854775807,"f":-0.0,"#,
        r#""d":"-Infinity","dec":"0.00","dec38":"9999999999999999999999999999.9999999999","#,
        r#""dt":"1900-01-01","tm":"23:59:59.999999","ts":"1900-01-01T00:00:00.000000","#,
        r#""tstz":"2262-04-11T23:47:16.854775+00:00","ts_ns":"2262-04-11T23:47:16.854775807","#,
        r#""tstz_ns":"2262-04-11T23:47:16.854775807+00:00","#,
        r#""s":"unicode ✓ \"quoted\" \\ back\nnewline, comma","#,
        r#""u":"ffffffff-ffff-ffff-ffff-ffffffffffff","fx":"ff00807f","bin":"000a0d","#,
        r#""geom":null,"st":{"x":2,"y":"a,b"},"lst":[200,null],"mp":[],"#,
        r#""mp2":[{"key":3,"value":null}],"ls":[null],"v":null,"unk":null}"#
    ),
];

const CSV: &str = concat!(
    "id,_row_id,b,i,l,f,d,dec,dec38,dt,tm,ts,tstz,ts_ns,tstz_ns,s,u,fx,bin,geom,st,lst,mp,mp2,ls,v,unk\n",
    "0,100,true,1,1234567890123,3.4028234663852886e+38,2.3333333333333335,1.23,0.0000000000,",
    "2024-01-15,12:34:56.789012,2024-01-15T12:34:56.789012,2024-01-15T12:34:56.789012+00:00,",
    "2024-01-02T03:04:05.123456789,2024-01-02T03:04:05.123456789+00:00,hello,",
    "f79c3e09-677c-4d67-b3a2-a7d9e8b1c2d3,01020304,dead,0101000000,",
    r#""{""x"":0,""y"":null}",[],"[{""key"":""a"",""value"":null},{""key"":""b"",""value"":0.5}]","#,
    r#""[{""key"":-1,""value"":[null]},{""key"":10,""value"":[]},{""key"":9,""value"":[1]}]","#,
    r#""[{""x"":1,""y"":""p""},{""x"":null,""y"":""q""}]","#,
    r#""{""a"":0,""b"":""str0"",""c"":[1,null,2.5],""d"":{""e"":true}}","#,
    "\n",
    "1,101,false,-2147483648,-9223372036854775808,NaN,Infinity,-0.01,-1.0000000001,1969-12-31,",
    "00:00:00.000000,1969-12-31T23:59:59.999999,1969-12-31T23:59:59.999999+00:00,",
    "1677-09-21T00:12:43.145224192,1677-09-21T00:12:43.145224192+00:00,\"\",",
    "00000000-0000-0000-0000-000000000000,00000000,\"\",,",
    r#""{""x"":1,""y"":""y1""}",[100],"[{""key"":""a"",""value"":1.0}]",[],[],"""plain, string""","#,
    "\n",
    "2,102,,,,,,,,,,,,,,,,,,,,,,,,,\n",
    "3,103,true,2147483647,9223372036854775807,-0.0,-Infinity,0.00,",
    "9999999999999999999999999999.9999999999,1900-01-01,23:59:59.999999,",
    "1900-01-01T00:00:00.000000,2262-04-11T23:47:16.854775+00:00,",
    "2262-04-11T23:47:16.854775807,2262-04-11T23:47:16.854775807+00:00,",
    "\"unicode ✓ \"\"quoted\"\" \\ back\nnewline, comma\",",
    "ffffffff-ffff-ffff-ffff-ffffffffffff,ff00807f,000a0d,,",
    r#""{""x"":2,""y"":""a,b""}","[200,null]",[],"[{""key"":3,""value"":null}]",[null],null,"#,
    "\n",
);

fn jsonl_of(batches: &[RecordBatch]) -> String {
    let mut w = JsonLinesWriter::new(Vec::new());
    for b in batches {
        w.write_batch(b).unwrap();
    }
    String::from_utf8(w.finish().unwrap()).unwrap()
}

fn csv_of(schema: &SchemaRef, batches: &[RecordBatch]) -> String {
    let mut w = CsvWriter::new(Vec::new(), schema);
    for b in batches {
        w.write_batch(b).unwrap();
    }
    String::from_utf8(w.finish().unwrap()).unwrap()
}

#[test]
fn json_lines_every_type() {
    let batch = all_types_batch();
    let out = jsonl_of(std::slice::from_ref(&batch));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4);
    for (got, want) in lines.iter().zip(JSONL) {
        assert_eq!(*got, want);
        // and it is valid JSON
        serde_json::from_str::<serde_json::Value>(got).unwrap();
    }
    assert!(out.ends_with("}\n"));
}

#[test]
fn json_lines_sliced_batches_and_many_batches() {
    let batch = all_types_batch();
    let parts = [batch.slice(0, 1), batch.slice(1, 2), batch.slice(3, 1)];
    let out = jsonl_of(&parts);
    assert_eq!(
        out,
        JSONL.iter().map(|l| format!("{l}\n")).collect::<String>()
    );
    // empty batch, empty stream
    assert_eq!(jsonl_of(&[batch.slice(0, 0)]), "");
    assert_eq!(jsonl_of(&[]), "");
    // a batch with no columns
    let none = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(2)),
    )
    .unwrap();
    assert_eq!(jsonl_of(&[none]), "{}\n{}\n");
    // the free function gives the writer's bytes
    let mut out = Vec::new();
    super::jsonl::encode_batch(&batch, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), jsonl_of(&[batch]));
}

#[test]
fn json_lines_large_output_is_flushed_in_chunks() {
    let n = 100_000;
    let ids = Int64Array::from_iter_values(0..n);
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)])),
        vec![Arc::new(ids)],
    )
    .unwrap();
    let out = jsonl_of(&[batch]);
    assert_eq!(out.lines().count(), n as usize);
    assert_eq!(out.lines().nth(99_999), Some(r#"{"id":99999}"#));
}

#[test]
fn csv_every_type() {
    let batch = all_types_batch();
    let out = csv_of(batch.schema_ref(), std::slice::from_ref(&batch));
    for (got, want) in out.split_inclusive('\n').zip(CSV.split_inclusive('\n')) {
        assert_eq!(got, want);
    }
    assert_eq!(out, CSV);
    // sliced batches give the same text
    let parts = [batch.slice(0, 2), batch.slice(2, 2)];
    assert_eq!(csv_of(batch.schema_ref(), &parts), CSV);
    // the free functions give the writer's bytes
    let mut out = Vec::new();
    super::csv::encode_header(batch.schema_ref(), &mut out);
    super::csv::encode_batch(&batch, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), CSV);
}

#[test]
fn csv_header_without_batches_and_quoting() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a,b", DataType::Utf8, true),
        Field::new("", DataType::Utf8, true),
        Field::new("q\"", DataType::Utf8, true),
    ]));
    assert_eq!(csv_of(&schema, &[]), "\"a,b\",\"\",\"q\"\"\"\n");
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec![Some(""), None, Some("cr\rx")])),
            Arc::new(StringArray::from(vec![None, Some("plain"), Some("\"")])),
            Arc::new(StringArray::from(vec![Some("x\ny"), Some(" sp "), None])),
        ],
    )
    .unwrap();
    assert_eq!(
        csv_of(&schema, std::slice::from_ref(&batch)),
        "\"a,b\",\"\",\"q\"\"\"\n\"\",,\"x\ny\"\n,plain, sp \n\"cr\rx\",\"\"\"\",\n"
    );
    let mut w = CsvWriter::without_header(Vec::new(), &schema);
    w.write_batch(&batch.slice(1, 1)).unwrap();
    assert_eq!(w.finish().unwrap(), b",plain, sp \n");
    // a batch of another shape is refused
    let mut w = CsvWriter::new(Vec::new(), &schema);
    assert!(w.write_batch(&all_types_batch()).is_err());
}

#[test]
fn text_flavor_per_column() {
    let batch = all_types_batch();
    let schema = batch.schema();
    let text = |name: &str, row: usize| {
        let (i, f) = schema.column_with_name(name).unwrap();
        let mut enc = ColumnEncoder::try_new(batch.column(i).as_ref(), f, Flavor::Text).unwrap();
        let mut out = Vec::new();
        enc.encode(row, &mut out);
        (enc.is_null(row), String::from_utf8(out).unwrap())
    };
    assert_eq!(text("s", 1), (false, String::new()));
    assert_eq!(text("s", 2), (true, String::new()));
    assert_eq!(text("f", 1), (false, "NaN".into()));
    assert_eq!(text("d", 3), (false, "-Infinity".into()));
    assert_eq!(text("unk", 0), (true, String::new()));
    assert_eq!(text("v", 1), (false, "\"plain, string\"".into()));
    assert_eq!(text("v", 3), (false, "null".into()));
    assert_eq!(text("v", 2), (true, String::new()));
    assert_eq!(
        text("u", 0),
        (false, "f79c3e09-677c-4d67-b3a2-a7d9e8b1c2d3".into())
    );
    assert_eq!(text("b", 1), (false, "false".into()));
    assert_eq!(text("st", 0), (false, r#"{"x":0,"y":null}"#.into()));
    assert_eq!(
        value_to_json(batch.column(15).as_ref(), &schema.fields()[15], 3).unwrap(),
        r#""unicode ✓ \"quoted\" \\ back\nnewline, comma""#
    );
    assert!(value_to_json(batch.column(15).as_ref(), &schema.fields()[15], 4).is_err());
}

#[test]
fn unsupported_type_is_an_error() {
    let dict: arrow::array::DictionaryArray<Int32Type> = vec!["a", "b"].into_iter().collect();
    let f = Field::new("d", dict.data_type().clone(), true);
    let err = ColumnEncoder::try_new(&dict, &f, Flavor::Json)
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("cannot encode Arrow type"),
        "{err}"
    );
}

#[test]
fn parquet_round_trip_keeps_field_ids_and_values() {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let batch = all_types_batch();
    let mut w = ParquetWriter::new(Vec::new(), batch.schema_ref()).unwrap();
    w.write_batch(&batch.slice(0, 2)).unwrap();
    w.write_batch(&batch.slice(2, 2)).unwrap();
    let bytes = bytes::Bytes::from(w.finish().unwrap());
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
    let meta = builder.metadata().clone();
    let root = meta.file_metadata().schema_descr().root_schema();
    let ids: BTreeMap<String, i32> = root
        .get_fields()
        .iter()
        .map(|f| (f.name().to_string(), f.get_basic_info().id()))
        .collect();
    assert_eq!(ids["id"], 1);
    assert_eq!(ids["_row_id"], 2147483540);
    assert_eq!(ids["tstz_ns"], 14);
    assert_eq!(ids["st"], 22);
    assert_eq!(ids["v"], 27);
    let st = root.get_fields().iter().find(|f| f.name() == "st").unwrap();
    let x = &st.get_fields()[0];
    assert_eq!((x.name(), x.get_basic_info().id()), ("x", 20));
    assert!(meta
        .row_group(0)
        .columns()
        .iter()
        .all(|c| c.compression() == parquet::basic::Compression::ZSTD(Default::default())));
    let back: Vec<RecordBatch> = builder
        .build()
        .unwrap()
        .collect::<std::result::Result<_, _>>()
        .unwrap();
    assert_eq!(
        jsonl_of(&back),
        JSONL.iter().map(|l| format!("{l}\n")).collect::<String>()
    );
}

// ---- the v3_variant fixture ------------------------------------------------------------------

fn fixtures() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures"))
}

/// id → the expected `v` of every row in every snapshot of `expected/v3_variant`.
fn expected_variants() -> BTreeMap<i64, serde_json::Value> {
    let dir = fixtures().join("expected/v3_variant");
    let mut want = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            let id = row["id"].as_i64().unwrap();
            let v = row["v"].clone();
            if let Some(prev) = want.insert(id, v.clone()) {
                assert_eq!(prev, v, "id {id} differs between snapshots");
            }
        }
    }
    want
}

/// Reads `id` and the variant group `v` of every data file of the fixture.
fn fixture_batches() -> Vec<RecordBatch> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let dir = fixtures().join("warehouse/db/v3_variant/data");
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("parquet"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty());
    for path in paths {
        let file = std::fs::File::open(&path).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        for b in reader {
            out.push(b.unwrap());
        }
    }
    out
}

#[test]
fn variant_fixture_decodes_to_expected_json() {
    let want = expected_variants();
    assert_eq!(want.len(), 14);
    let mut seen = BTreeMap::new();
    for batch in fixture_batches() {
        let ids = batch
            .column_by_name("id")
            .unwrap()
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let v = batch.column_by_name("v").unwrap();
        let v = v.as_any().downcast_ref::<StructArray>().unwrap();
        let json = super::variant::variant_struct_to_json(v).unwrap();
        for i in 0..batch.num_rows() {
            let text = (!json.is_null(i)).then(|| json.value(i).to_string());
            seen.insert(ids.value(i), text);
        }
    }
    let mut compared = 0;
    for (id, expected) in &want {
        let got = seen
            .get(id)
            .unwrap_or_else(|| panic!("id {id} is not in the data files"));
        let got_value = match got {
            Some(t) => serde_json::from_str::<serde_json::Value>(t).unwrap(),
            None => serde_json::Value::Null,
        };
        assert_eq!(&got_value, expected, "id {id}");
        // the exact text too: key order, number and string formats
        if let Some(t) = got {
            assert_eq!(t, &serde_json::to_string(expected).unwrap(), "id {id}");
        }
        compared += 1;
    }
    assert_eq!(compared, 14);
    // both kinds of null are in the fixture: a variant null and a SQL NULL
    assert!(seen.values().any(|t| t.as_deref() == Some("null")));
    assert!(seen.values().any(|t| t.is_none()));
}

#[test]
fn variant_fixture_through_the_writers() {
    // The scan layer may hand the variant group over undecoded: the encoders decode it.
    let want = expected_variants();
    let mut lines = Vec::new();
    let mut csv = String::new();
    for batch in fixture_batches() {
        let schema = batch.schema();
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .map(|f| {
                if f.name() == "v" {
                    typed(f.as_ref().clone(), "variant")
                } else {
                    f.as_ref().clone()
                }
            })
            .collect();
        let schema: SchemaRef = Arc::new(Schema::new(fields));
        let batch = batch.with_schema(schema.clone()).unwrap();
        let out = jsonl_of(std::slice::from_ref(&batch));
        lines.extend(out.lines().map(str::to_string));
        csv.push_str(&csv_of(&schema, &[batch]));
    }
    let mut n = 0;
    for line in &lines {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = row["id"].as_i64().unwrap();
        assert_eq!(row["v"], want[&id], "id {id}");
        n += 1;
    }
    assert_eq!(n, 14);
    assert!(csv.contains("\n2,\"\"\"plain string 2\"\"\"\n"), "{csv}");
    assert!(csv.contains("\n4,\"\"\"-12.345\"\"\"\n"), "{csv}");
}

/// Throughput check (not a correctness test): `cargo test --release -p icefloe-core
/// encode_throughput -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark"]
fn encode_throughput() {
    let n = 1_000_000usize;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("amount", DataType::Float64, true),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
            true,
        ),
        Field::new("dec", DataType::Decimal128(18, 2), true),
        Field::new("dt", DataType::Date32, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("name_{i}")),
            )),
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| i as f64 * 1.5 + 0.25),
            )),
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(
                    (0..n as i64).map(|i| 1_700_000_000_000_000 + i * 3_600_000_017),
                )
                .with_timezone("+00:00"),
            ),
            Arc::new(
                Decimal128Array::from_iter_values((0..n as i128).map(|i| i * 37 - 5000))
                    .with_precision_and_scale(18, 2)
                    .unwrap(),
            ),
            Arc::new(Date32Array::from_iter_values(
                (0..n as i32).map(|i| i % 40000),
            )),
        ],
    )
    .unwrap();
    for (i, f) in schema.fields().iter().enumerate() {
        let col = batch.column(i);
        let mut enc = ColumnEncoder::try_new(col.as_ref(), f, Flavor::Json).unwrap();
        let mut out = Vec::with_capacity(1 << 20);
        let t = std::time::Instant::now();
        for row in 0..n {
            enc.encode(row, &mut out);
            if out.len() > 1 << 19 {
                out.clear();
            }
        }
        println!(
            "column {}: {:.1} ns/value",
            f.name(),
            t.elapsed().as_nanos() as f64 / n as f64
        );
    }
    {
        let mut out = Vec::with_capacity(1 << 20);
        let t = std::time::Instant::now();
        for i in 0..n {
            let mut b = ryu::Buffer::new();
            out.extend_from_slice(b.format_finite(i as f64 * 1.5 + 0.25).as_bytes());
            if out.len() > 1 << 19 {
                out.clear();
            }
        }
        println!(
            "raw ryu: {:.1} ns/value",
            t.elapsed().as_nanos() as f64 / n as f64
        );
    }
    let batches: Vec<RecordBatch> = (0..n / 8192 + 1)
        .map(|k| batch.slice(k * 8192, 8192.min(n - k * 8192)))
        .collect();
    for _ in 0..2 {
        let t = std::time::Instant::now();
        let mut w = JsonLinesWriter::new(CountingSink(0));
        for b in &batches {
            w.write_batch(b).unwrap();
        }
        let bytes = w.finish().unwrap().0;
        let e = t.elapsed();
        println!(
            "jsonl: {n} rows, {bytes} bytes in {e:?} ({:.0} MB/s, {:.1} Mrows/s)",
            bytes as f64 / e.as_secs_f64() / 1e6,
            n as f64 / e.as_secs_f64() / 1e6
        );
        let t = std::time::Instant::now();
        let mut w = CsvWriter::new(CountingSink(0), &schema);
        for b in &batches {
            w.write_batch(b).unwrap();
        }
        let bytes = w.finish().unwrap().0;
        let e = t.elapsed();
        println!(
            "csv:   {n} rows, {bytes} bytes in {e:?} ({:.0} MB/s, {:.1} Mrows/s)",
            bytes as f64 / e.as_secs_f64() / 1e6,
            n as f64 / e.as_secs_f64() / 1e6
        );
    }
}

struct CountingSink(usize);

impl std::io::Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
