// Writes a metadata-only Iceberg v3 table for the planning benchmark whose manifests are merged
// the way Iceberg Java's default MergeAppend merges them (the table's `--shape merged`, beside
// GenMetadataOnly.java's unmerged one): N data files (none of them exists on disk) in an
// identity partition `part` with 1000 values, written by 100 appends (table.newAppend(), so
// manifest merging with the defaults: commit.manifest.target-size-bytes 8 MB,
// commit.manifest.min-count-to-merge 100) of N/100 files each, in part order, then 10 row-delta
// commits that add deletion vectors for 1% of the files (every 100th) in real Puffin files
// (BaseDVFileWriter, one Puffin file per commit, under data/), which merge delete manifests the
// same way. Data files are named as Spark names them (part=P/<task>-<attempt>-<UUID>-00001.parquet)
// and carry column metrics for `id`, `part` and `ts` (sizes, value and null counts, lower and upper
// bounds), as a Parquet writer records them: GenMetadataOnly.java's files have neither.
//
// Usage: java -cp <iceberg-spark-runtime jar>:<pyspark jars>/* GenMergedMetadata.java
//            WAREHOUSE NAME N [TARGET_MANIFEST_BYTES]
//   TARGET_MANIFEST_BYTES sets commit.manifest.target-size-bytes (to see the merging on a small
//   table); without it the table keeps Iceberg's defaults.
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.*;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.deletes.BaseDVFileWriter;
import org.apache.iceberg.deletes.DVFileWriter;
import org.apache.iceberg.hadoop.HadoopCatalog;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Types;

public class GenMergedMetadata {
  static final int PARTS = 1000;
  static final int APPENDS = 100;
  static final int DELTAS = 10;

  public static void main(String[] args) throws IOException {
    String warehouse = args[0];
    String name = args[1];
    int n = Integer.parseInt(args[2]);
    HadoopCatalog catalog = new HadoopCatalog(new Configuration(), warehouse);
    TableIdentifier id = TableIdentifier.of("db", name);
    if (catalog.tableExists(id)) {
      catalog.dropTable(id, true);
    }
    Schema schema =
        new Schema(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.required(2, "part", Types.IntegerType.get()),
            Types.NestedField.optional(3, "ts", Types.TimestampType.withZone()));
    PartitionSpec spec = PartitionSpec.builderFor(schema).identity("part").build();
    Map<String, String> props = new HashMap<>();
    props.put("format-version", "3");
    if (args.length > 3) {
      props.put(TableProperties.MANIFEST_TARGET_SIZE_BYTES, args[3]);
    }
    Table table = catalog.createTable(id, schema, spec, props);
    String loc = table.location();
    long start = System.nanoTime();
    int perPart = Math.max(1, n / PARTS);
    long rows = 100;
    DataFile[] withDv = new DataFile[n / 100];
    Random rnd = new Random(42); // file names as Spark writes them, with a (seeded) UUID each
    for (int a = 0; a < APPENDS; a++) {
      AppendFiles append = table.newAppend();
      int from = (int) ((long) n * a / APPENDS);
      int to = (int) ((long) n * (a + 1) / APPENDS);
      for (int i = from; i < to; i++) {
        int part = Math.min(PARTS - 1, i / perPart);
        DataFile f =
            DataFiles.builder(spec)
                .withPath(
                    String.format(
                        "%s/data/part=%d/%05d-%d-%s-%05d.parquet",
                        loc, part, i % 200, a, new UUID(rnd.nextLong(), rnd.nextLong()), 1))
                .withFormat(FileFormat.PARQUET)
                .withFileSizeInBytes(4096)
                .withPartitionPath("part=" + part)
                .withMetrics(metrics(rows, (long) i * rows, part))
                .build();
        append.appendFile(f);
        if (i % 100 == 0 && i / 100 < withDv.length) {
          withDv[i / 100] = f;
        }
      }
      append.commit();
    }
    for (int d = 0; d < DELTAS; d++) {
      int from = (int) ((long) withDv.length * d / DELTAS);
      int to = (int) ((long) withDv.length * (d + 1) / DELTAS);
      if (from == to) {
        continue;
      }
      OutputFileFactory files =
          OutputFileFactory.builderFor(table, d, 0).format(FileFormat.PUFFIN).build();
      DVFileWriter writer = new BaseDVFileWriter(files, path -> null);
      try (writer) {
        for (int k = from; k < to; k++) {
          DataFile f = withDv[k];
          for (int p = 0; p <= k % 7; p++) {
            writer.delete(f.location(), p * 13L, spec, f.partition());
          }
        }
      }
      RowDelta delta = table.newRowDelta();
      writer.result().deleteFiles().forEach(delta::addDeletes);
      delta.commit();
    }
    Snapshot snap = table.currentSnapshot();
    List<ManifestFile> manifests = snap.allManifests(table.io());
    StringBuilder data = new StringBuilder();
    StringBuilder deletes = new StringBuilder();
    int dataCount = 0;
    int deleteCount = 0;
    for (ManifestFile m : manifests) {
      long entries =
          (m.addedFilesCount() == null ? 0 : m.addedFilesCount())
              + (m.existingFilesCount() == null ? 0 : m.existingFilesCount());
      String s = String.format(" %d/%.0fkB", entries, m.length() / 1e3);
      if (m.content() == ManifestContent.DATA) {
        dataCount++;
        data.append(s);
      } else {
        deleteCount++;
        deletes.append(s);
      }
    }
    System.out.printf(
        "%s: %d data files, %d deletion vectors, %d data manifests (entries/size:%s), "
            + "%d delete manifests (%s), %.1f s%n",
        name,
        n,
        withDv.length,
        dataCount,
        data,
        deleteCount,
        deletes.toString().trim(),
        (System.nanoTime() - start) / 1e9);
  }

  /**
   * Metrics of a data file of `rows` rows with ids firstId.., one value of `part` and a `ts` a
   * second per id from 2026-01-01 on (one null).
   */
  static Metrics metrics(long rows, long firstId, int part) {
    long ts0 = 1_767_225_600_000_000L + firstId * 1_000_000L;
    Map<Integer, Long> sizes = Map.of(1, rows * 8, 2, 16L, 3, rows * 4);
    Map<Integer, Long> counts = Map.of(1, rows, 2, rows, 3, rows);
    Map<Integer, Long> nulls = Map.of(1, 0L, 2, 0L, 3, 1L);
    Map<Integer, ByteBuffer> lower =
        Map.of(
            1, Conversions.toByteBuffer(Types.LongType.get(), firstId),
            2, Conversions.toByteBuffer(Types.IntegerType.get(), part),
            3, Conversions.toByteBuffer(Types.TimestampType.withZone(), ts0));
    Map<Integer, ByteBuffer> upper =
        Map.of(
            1, Conversions.toByteBuffer(Types.LongType.get(), firstId + rows - 1),
            2, Conversions.toByteBuffer(Types.IntegerType.get(), part),
            3,
                Conversions.toByteBuffer(
                    Types.TimestampType.withZone(), ts0 + (rows - 2) * 1_000_000L));
    return new Metrics(rows, sizes, counts, nulls, null, lower, upper);
  }
}
