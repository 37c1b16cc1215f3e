package net.epidemic.gossipsim;

/**
 * A single update (rumor) injected at one node.  The uid is what the nodes
 * gossip about; it is 12 random bytes so that it fits in one log field.
 */
public class Update {
    public final int origin;
    public final int round;
    public final byte[] uid;

    public Update(int origin, int round, byte[] uid) {
        this.origin = origin;
        this.round = round;
        this.uid = uid;
    }
}
