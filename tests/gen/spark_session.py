"""The one Spark 3.5 + Iceberg 1.10 session the Python generators share: the Iceberg catalog
`x` (Hadoop layout) over a warehouse directory, UTC everywhere, no UI.

The jars come from `ICEBERG_GEN_HOME` (default `~/.cache/iceberg-gen`), where
`benches/bench-table/make-bench-table` and `scripts/iceberg-jars` put them.
"""
import os

GEN_HOME = os.environ.get("ICEBERG_GEN_HOME", os.path.expanduser("~/.cache/iceberg-gen"))
ICEBERG_JAR = os.path.join(GEN_HOME, "jars", "iceberg-spark-runtime-3.5_2.12-1.10.2.jar")
JACKSON_JAR = os.path.join(GEN_HOME, "jars", "iceberg-shaded-jackson-2.18.2.jar")


def make_spark(app, warehouse, cores=1, extra_jars=(), driver_memory="1g", shuffle_partitions=None):
    """A local Spark session named `app` with `cores` threads over `warehouse`; `extra_jars`
    are added to the Iceberg runtime and its relocated Jackson."""
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master(f"local[{cores}]")
             .appName(app)
             .config("spark.jars", ",".join([ICEBERG_JAR, JACKSON_JAR] + list(extra_jars)))
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.catalog.x", "org.apache.iceberg.spark.SparkCatalog")
             .config("spark.sql.catalog.x.type", "hadoop")
             .config("spark.sql.catalog.x.warehouse", warehouse)
             .config("spark.sql.catalog.x.cache-enabled", "false")
             .config("spark.sql.shuffle.partitions", str(shuffle_partitions or cores))
             .config("spark.default.parallelism", str(cores))
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
             .config("spark.driver.memory", driver_memory)
             .config("spark.ui.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark
