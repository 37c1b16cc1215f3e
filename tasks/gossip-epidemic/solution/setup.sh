#!/bin/bash
# Reference deployment for gossip-epidemic.
# Snags: (1) build.xml compiles with -source/-target 1.5, which JDK 17 rejects;
# (2) EventLog uses sun.misc.BASE64Encoder (gone since Java 9) and
# javax.xml.bind.DatatypeConverter (gone since Java 11); the port must keep
# the exact output (standard Base64 without line breaks for 12-byte ids,
# UPPER-case hex for the chained SHA-1), since the log head chains on it;
# (3) lib/commons-cli-1.2.jar is missing and Maven Central is unreachable:
# Debian's libcommons-cli-java (1.5, API compatible) is used instead.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends default-jdk-headless ant libcommons-cli-java

cd /workspace/artifact
mkdir -p lib
cp /usr/share/java/commons-cli.jar lib/commons-cli-1.2.jar
sed -i 's/source="1.5" target="1.5"/source="1.8" target="1.8"/' build.xml

f=src/net/epidemic/gossipsim/EventLog.java
sed -i -e '/^import javax.xml.bind.DatatypeConverter;/d' \
       -e 's/^import sun.misc.BASE64Encoder;/import java.util.Base64;/' \
       -e 's/private final BASE64Encoder b64 = new BASE64Encoder();/private final Base64.Encoder b64 = Base64.getEncoder();/' \
       -e 's/b64.encode(u.uid)/b64.encodeToString(u.uid)/' \
       -e 's/DatatypeConverter.printHexBinary(d)/upperHex(d)/' "$f"
# add the helper before the last closing brace
sed -i '$ d' "$f"
cat >> "$f" <<'JAVA'

    /** Same output as DatatypeConverter.printHexBinary: upper case, no separators. */
    private static String upperHex(byte[] d) {
        StringBuilder sb = new StringBuilder(2 * d.length);
        for (byte b : d)
            sb.append(String.format("%02X", b & 0xff));
        return sb.toString();
    }
}
JAVA

ant clean jar
ant smoke
./run_tables.sh
cat results/table1.csv results/table2.csv
