package net.epidemic.gossipsim;

import java.io.UnsupportedEncodingException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

import javax.xml.bind.DatatypeConverter;

import sun.misc.BASE64Encoder;

/**
 * Hash-chained log of delivery events.  Every time a node learns an update
 * we append the line
 *
 *     trial round node uid-base64
 *
 * and replace the head by SHA-1(head + "\n" + line), written as upper case
 * hex.  Two runs delivered exactly the same updates at exactly the same
 * rounds iff their log heads are equal; we report the head in every table
 * row so that results from different machines can be compared.
 */
public class EventLog {
    private static final String GENESIS = "GOSSIPSIM-1";

    private final MessageDigest sha1;
    private final BASE64Encoder b64 = new BASE64Encoder();
    private String head;
    private long events;

    public EventLog() {
        try {
            sha1 = MessageDigest.getInstance("SHA-1");
        } catch (NoSuchAlgorithmException e) {
            throw new RuntimeException(e);
        }
        reset();
    }

    public void reset() {
        head = GENESIS;
        events = 0;
    }

    public void deliver(int trial, int round, int node, Update u) {
        String line = trial + " " + round + " " + node + " " + b64.encode(u.uid);
        try {
            sha1.reset();
            byte[] d = sha1.digest((head + "\n" + line).getBytes("US-ASCII"));
            head = DatatypeConverter.printHexBinary(d);
        } catch (UnsupportedEncodingException e) {
            throw new RuntimeException(e);
        }
        events++;
    }

    public String head() {
        return head;
    }

    public long events() {
        return events;
    }
}
