package net.epidemic.gossipsim;

import java.util.Random;

/**
 * Uniform gossip network: every node can contact every other node; each
 * message is lost independently with probability loss.
 */
public class Network {
    private final int n;
    private final double loss;
    private final Random rnd;
    private long sent;
    private long lost;

    public Network(int n, double loss, Random rnd) {
        this.n = n;
        this.loss = loss;
        this.rnd = rnd;
    }

    /** A peer chosen uniformly among the other n-1 nodes. */
    public int randomPeer(int self) {
        int p = rnd.nextInt(n - 1);
        return p >= self ? p + 1 : p;
    }

    /** Sends one message; returns false when it is lost. */
    public boolean send() {
        sent++;
        if (loss > 0 && rnd.nextDouble() < loss) {
            lost++;
            return false;
        }
        return true;
    }

    public long sent() {
        return sent;
    }

    public long lost() {
        return lost;
    }

    public Random random() {
        return rnd;
    }
}
