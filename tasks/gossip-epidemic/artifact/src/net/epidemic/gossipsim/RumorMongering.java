package net.epidemic.gossipsim;

import java.util.Random;

/**
 * Rumor mongering (complex epidemics).  Infective ("hot") nodes push the
 * rumor to a random peer every round and lose interest
 *
 *   feedback-counter: after k pushes to nodes that already knew it
 *   feedback-coin:    with probability 1/k after each such push
 *   blind-counter:    after k pushes, whatever the outcome
 *   blind-coin:       with probability 1/k after each push
 *
 * A lost message gives the sender no feedback.  The run ends when no node
 * is infective; the residue is the fraction of nodes that never heard the
 * rumor.
 */
public class RumorMongering extends Protocol {
    private static final int SUSCEPTIBLE = 0, INFECTIVE = 1, REMOVED = 2;

    private final boolean feedback;
    private final boolean coin;
    private final int k;
    private final String variant;

    public RumorMongering(String variant, int k) {
        if (variant.equals("feedback-counter")) {
            feedback = true; coin = false;
        } else if (variant.equals("feedback-coin")) {
            feedback = true; coin = true;
        } else if (variant.equals("blind-counter")) {
            feedback = false; coin = false;
        } else if (variant.equals("blind-coin")) {
            feedback = false; coin = true;
        } else {
            throw new IllegalArgumentException("unknown rumor variant " + variant);
        }
        if (k < 1)
            throw new IllegalArgumentException("k must be >= 1");
        this.variant = variant;
        this.k = k;
    }

    public String describe() {
        return "rumor mongering " + variant + " k=" + k;
    }

    public TrialResult run(int trial, int n, Update u, Network net, EventLog log, int maxRounds) {
        Random rnd = net.random();
        int[] state = new int[n];
        int[] counter = new int[n];
        state[u.origin] = INFECTIVE;
        log.deliver(trial, 0, u.origin, u);
        int informed = 1, hot = 1;
        long sent0 = net.sent();
        int round = 0;
        while (hot > 0 && round < maxRounds) {
            round++;
            int[] next = (int[]) state.clone();
            for (int i = 0; i < n; i++) {
                if (state[i] != INFECTIVE)
                    continue;
                int p = net.randomPeer(i);
                boolean delivered = net.send();
                boolean lose = false;
                if (delivered && next[p] == SUSCEPTIBLE) {
                    next[p] = INFECTIVE;
                    informed++;
                    hot++;
                    log.deliver(trial, round, p, u);
                } else if (delivered || !feedback) {
                    lose = feedback;
                }
                if (!feedback)
                    lose = true;
                if (lose) {
                    if (coin) {
                        if (rnd.nextInt(k) == 0) {
                            next[i] = REMOVED;
                            hot--;
                        }
                    } else if (++counter[i] >= k) {
                        next[i] = REMOVED;
                        hot--;
                    }
                }
            }
            state = next;
        }
        TrialResult r = new TrialResult();
        r.rounds = round;
        r.informed = informed;
        r.messages = net.sent() - sent0;
        r.finished = hot == 0;
        return r;
    }
}
