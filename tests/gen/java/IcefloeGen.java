// Compiled by gen_formats.py and called through py4j: py4j hands Python ints to Java as Integer,
// and Iceberg's generic writers need a Long for a `long` field.
public class IcefloeGen {
    public static void setLong(org.apache.iceberg.data.GenericRecord rec, String name, String value) {
        rec.setField(name, Long.valueOf(value));
    }
}
