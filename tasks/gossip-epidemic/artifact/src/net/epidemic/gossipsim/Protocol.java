package net.epidemic.gossipsim;

import java.util.Properties;

/** A dissemination protocol (Demers et al., PODC '87, Sections 1.3 and 1.4). */
public abstract class Protocol {
    public abstract String describe();

    /**
     * Disseminates update u, known initially only at u.origin, among n nodes.
     */
    public abstract TrialResult run(int trial, int n, Update u, Network net, EventLog log, int maxRounds);

    /** Builds a protocol from "protocol=... variant=... k=..." settings. */
    public static Protocol create(Properties p) {
        String name = p.getProperty("protocol");
        if (name == null)
            throw new IllegalArgumentException("run without protocol=");
        if (name.equals("push"))
            return new AntiEntropy(AntiEntropy.PUSH);
        if (name.equals("pull"))
            return new AntiEntropy(AntiEntropy.PULL);
        if (name.equals("push-pull") || name.equals("pushpull"))
            return new AntiEntropy(AntiEntropy.PUSH_PULL);
        if (name.equals("rumor")) {
            String v = p.getProperty("variant", "feedback-counter");
            int k = Integer.parseInt(p.getProperty("k", "1"));
            return new RumorMongering(v, k);
        }
        throw new IllegalArgumentException("unknown protocol " + name);
    }
}
