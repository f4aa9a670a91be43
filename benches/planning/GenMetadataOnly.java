// Writes metadata-only Iceberg v3 tables for the planning benchmark: N data files
// (none of them exists on disk) in an identity partition `part` with 1000 values, appended in
// part order, 10 parts per manifest (100 data manifests), and a deletion vector for
// 1% of the files (every 100th), all through the Iceberg Java API (the Spark runtime jar).
//
// Usage: java -cp <iceberg-spark-runtime jar>:<pyspark jars>/* GenMetadataOnly.java WAREHOUSE NAME N
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.*;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.hadoop.HadoopCatalog;
import org.apache.iceberg.types.Types;

public class GenMetadataOnly {
  public static void main(String[] args) {
    String warehouse = args[0];
    String name = args[1];
    int n = Integer.parseInt(args[2]);
    int parts = 1000;
    HadoopCatalog catalog = new HadoopCatalog(new Configuration(), warehouse);
    TableIdentifier id = TableIdentifier.of("db", name);
    if (catalog.tableExists(id)) {
      catalog.dropTable(id, true);
    }
    Schema schema =
        new Schema(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.required(2, "part", Types.IntegerType.get()));
    PartitionSpec spec = PartitionSpec.builderFor(schema).identity("part").build();
    // No manifest merging: the 100 manifests of the appends stay as they are.
    Table table =
        catalog.createTable(
            id,
            schema,
            spec,
            Map.of("format-version", "3", "commit.manifest-merge.enabled", "false"));
    String loc = table.location();
    long start = System.nanoTime();
    // One fast append (one manifest) per 10 consecutive parts: 100 data manifests, each
    // with partition summaries covering 10 values of `part`.
    DataFile[] withDv = new DataFile[n / 100];
    int perPart = Math.max(1, n / parts);
    AppendFiles append = null;
    int group = -1;
    for (int i = 0; i < n; i++) {
      int part = Math.min(parts - 1, i / perPart);
      if (part / 10 != group) {
        if (append != null) {
          append.commit();
        }
        append = table.newFastAppend();
        group = part / 10;
      }
      DataFile f =
          DataFiles.builder(spec)
              .withPath(loc + "/data/part=" + part + "/" + String.format("%08d", i) + ".parquet")
              .withFormat(FileFormat.PARQUET)
              .withFileSizeInBytes(4096)
              .withRecordCount(100)
              .withPartitionPath("part=" + part)
              .build();
      append.appendFile(f);
      if (i % 100 == 0 && i / 100 < withDv.length) {
        withDv[i / 100] = f;
      }
    }
    append.commit();
    RowDelta delta = table.newRowDelta();
    for (int k = 0; k < withDv.length; k++) {
      DataFile f = withDv[k];
      delta.addDeletes(
          FileMetadata.deleteFileBuilder(spec)
              .ofPositionDeletes()
              .withFormat(FileFormat.PUFFIN)
              .withPath(loc + "/data/dv-" + (k / 1000) + ".puffin")
              .withPartition(f.partition())
              .withFileSizeInBytes(1 << 20)
              .withRecordCount(1 + k % 7)
              .withContentOffset(4 + (k % 1000) * 64L)
              .withContentSizeInBytes(48)
              .withReferencedDataFile(f.location())
              .build());
    }
    delta.commit();
    System.out.printf(
        "%s: %d data files, %d deletion vectors, %d manifests, %.1f s%n",
        name,
        n,
        withDv.length,
        table.currentSnapshot().allManifests(table.io()).size(),
        (System.nanoTime() - start) / 1e9);
  }
}
