// Compiled by tests/gen/other_writers.py and called through py4j: the Iceberg Java API calls
// that build the tables whose shape no installable writer produces (Hive-style files whose
// partition column has metrics taken from the partition value; a format-version 1 manifest list
// whose counts disagree with its manifest), and Iceberg Java's generic reader for the tables
// Spark 3.5 cannot read (a `time` column).
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestWriter;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.MetricsConfig;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.expressions.Literal;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.mapping.NameMappingParser;
import org.apache.iceberg.mapping.MappingUtil;
import org.apache.iceberg.parquet.ParquetUtil;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.JsonUtil;

public class OtherWritersGen {
  private OtherWritersGen() {}

  /** Sets the table's default name mapping (files without field ids are read by name). */
  public static void setNameMapping(Table t) {
    t.updateProperties()
        .set("schema.name-mapping.default", NameMappingParser.toJson(MappingUtil.create(t.schema())))
        .commit();
  }

  /**
   * A data file at `path` (a Parquet file without the partition columns, in a Hive-style
   * directory `partitionPath` such as `p=7` or `a=1/b=x`): metrics of the stored columns from
   * its footer (by name mapping), and for every identity partition column a value count, a
   * null count and lower/upper bounds taken from the partition value, as a writer that infers
   * the partition from the path records them.
   */
  public static DataFile hiveFile(Table t, String path, String partitionPath) {
    PartitionSpec spec = t.spec();
    InputFile in = t.io().newInputFile(path);
    Metrics footer = ParquetUtil.fileMetrics(in, MetricsConfig.forTable(t),
        MappingUtil.create(t.schema()));
    GenericRecord partition = GenericRecord.create(spec.partitionType());
    String[] parts = partitionPath.split("/");
    long rows = footer.recordCount();
    Map<Integer, Long> values = copy(footer.valueCounts());
    Map<Integer, Long> nulls = copy(footer.nullValueCounts());
    Map<Integer, Long> nans = copy(footer.nanValueCounts());
    Map<Integer, ByteBuffer> lower = copy(footer.lowerBounds());
    Map<Integer, ByteBuffer> upper = copy(footer.upperBounds());
    List<PartitionField> fields = spec.fields();
    for (int i = 0; i < fields.size(); i++) {
      PartitionField f = fields.get(i);
      String[] kv = parts[i].split("=", 2);
      if (!f.transform().isIdentity() || !kv[0].equals(f.name())) {
        throw new IllegalArgumentException(partitionPath + " does not match " + spec);
      }
      Type type = t.schema().findType(f.sourceId());
      Object v = fromPath(type, URLDecoder.decode(kv[1], StandardCharsets.UTF_8));
      partition.set(i, v);
      values.put(f.sourceId(), rows);
      nulls.put(f.sourceId(), v == null ? rows : 0L);
      if (type.typeId() == Type.TypeID.FLOAT || type.typeId() == Type.TypeID.DOUBLE) {
        nans.put(f.sourceId(), 0L);
      }
      if (v != null) {
        lower.put(f.sourceId(), Conversions.toByteBuffer(type, v));
        upper.put(f.sourceId(), Conversions.toByteBuffer(type, v));
      }
    }
    Metrics m = new Metrics(rows, footer.columnSizes(), values, nulls, nans, lower, upper);
    return DataFiles.builder(spec).withPath(path).withFormat(FileFormat.PARQUET)
        .withFileSizeInBytes(in.getLength()).withPartition(partition).withMetrics(m).build();
  }

  /** A Hive path value as Iceberg's internal value of `type` (binary: the UTF-8 bytes). */
  private static Object fromPath(Type type, String s) {
    if (s.equals("__HIVE_DEFAULT_PARTITION__")) {
      return null;
    }
    switch (type.typeId()) {
      case BOOLEAN:
        return Boolean.parseBoolean(s);
      case INTEGER:
        return Integer.parseInt(s);
      case LONG:
        return Long.parseLong(s);
      case FLOAT:
        return Float.parseFloat(s);
      case DOUBLE:
        return Double.parseDouble(s);
      case DECIMAL:
        return new BigDecimal(s);
      case STRING:
        return s;
      case BINARY:
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
      default:
        return Literal.of(s).to(type).value();
    }
  }

  private static <V> Map<Integer, V> copy(Map<Integer, V> m) {
    return m == null ? new HashMap<>() : new HashMap<>(m);
  }

  /**
   * Appends `files` in one new manifest whose manifest list entry records `addedFiles` added
   * files and `addedRows` added rows, whatever the manifest holds (the snapshot summary takes
   * the same counts). Needs `compatibility.snapshot-id-inheritance.enabled` on a format
   * version 1 table, so that the manifest is listed as written instead of copied.
   */
  public static void appendWithCounts(Table t, List<DataFile> files, int addedFiles,
      long addedRows) {
    String path = t.location() + "/metadata/loose-counts-" + System.nanoTime() + "-m0.avro";
    ManifestWriter<DataFile> w = ManifestFiles.write(1, t.spec(), t.io().newOutputFile(path), null);
    try {
      for (DataFile f : files) {
        w.add(f);
      }
      w.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    ManifestFile real = w.toManifestFile();
    ManifestFile loose = (ManifestFile) java.lang.reflect.Proxy.newProxyInstance(
        ManifestFile.class.getClassLoader(), new Class<?>[] {ManifestFile.class},
        (proxy, method, args) -> {
          switch (method.getName()) {
            case "addedFilesCount":
              return addedFiles;
            case "addedRowsCount":
              return addedRows;
            case "hasAddedFiles":
              return addedFiles > 0;
            default:
              return method.invoke(real, args);
          }
        });
    t.newFastAppend().appendManifest(loose).commit();
  }

  /**
   * The rows of snapshot `snapshotId` as Iceberg's generic reader reads them, with
   * `_row_id` and `_last_updated_sequence_number` first, one JSON object per row in the
   * fixture encoding (tests/fixtures/README.md).
   */
  public static List<String> genericRows(Table t, long snapshotId) throws IOException {
    Schema schema = t.schemas().get(t.snapshot(snapshotId).schemaId());
    List<Types.NestedField> cols = new ArrayList<>();
    cols.add(MetadataColumns.ROW_ID);
    cols.add(MetadataColumns.LAST_UPDATED_SEQUENCE_NUMBER);
    cols.addAll(schema.columns());
    Schema projected = new Schema(cols);
    List<String> out = new ArrayList<>();
    try (CloseableIterable<Record> rows =
        IcebergGenerics.read(t).useSnapshot(snapshotId).project(projected).build()) {
      for (Record r : rows) {
        StringBuilder sb = new StringBuilder("{");
        for (int i = 0; i < cols.size(); i++) {
          if (i > 0) {
            sb.append(", ");
          }
          sb.append(JsonUtil.mapper().writeValueAsString(cols.get(i).name())).append(": ");
          sb.append(json(r.get(i), cols.get(i).type()));
        }
        out.add(sb.append("}").toString());
      }
    }
    return out;
  }

  private static String json(Object v, Type type) throws IOException {
    if (v == null) {
      return "null";
    }
    switch (type.typeId()) {
      case BOOLEAN:
      case INTEGER:
      case LONG:
        return v.toString();
      case FLOAT:
      case DOUBLE: {
        double d = ((Number) v).doubleValue();
        if (Double.isNaN(d)) {
          return "\"NaN\"";
        }
        if (Double.isInfinite(d)) {
          return d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
        }
        return Double.toString(d);
      }
      case DECIMAL:
        return quote(((BigDecimal) v).toPlainString());
      case DATE:
        return quote(((LocalDate) v).toString());
      case TIME:
        return quote(((LocalTime) v).format(DateTimeFormatter.ofPattern("HH:mm:ss.SSSSSS")));
      case TIMESTAMP:
        if (((Types.TimestampType) type).shouldAdjustToUTC()) {
          LocalDateTime utc = ((OffsetDateTime) v).withOffsetSameInstant(ZoneOffset.UTC)
              .toLocalDateTime();
          return quote(utc.format(DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS"))
              + "+00:00");
        }
        return quote(((LocalDateTime) v)
            .format(DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS")));
      case STRING:
      case UUID:
        return quote(v.toString());
      case BINARY:
      case FIXED: {
        ByteBuffer b = v instanceof ByteBuffer ? ((ByteBuffer) v).duplicate() : ByteBuffer.wrap((byte[]) v);
        StringBuilder sb = new StringBuilder();
        while (b.hasRemaining()) {
          sb.append(String.format("%02x", b.get() & 0xff));
        }
        return quote(sb.toString());
      }
      default:
        throw new IllegalArgumentException("no fixture encoding here for " + type);
    }
  }

  private static String quote(String s) throws IOException {
    return JsonUtil.mapper().writeValueAsString(s);
  }
}

