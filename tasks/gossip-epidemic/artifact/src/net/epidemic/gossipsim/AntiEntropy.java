package net.epidemic.gossipsim;

/**
 * Anti-entropy: in every round every node picks a random peer and the two
 * resolve their differences by push, pull or push-pull.  Rounds are
 * synchronous: what a node sends is what it knew at the start of the round.
 */
public class AntiEntropy extends Protocol {
    public static final int PUSH = 0, PULL = 1, PUSH_PULL = 2;
    private static final String[] NAMES = { "push", "pull", "push-pull" };

    private final int mode;

    public AntiEntropy(int mode) {
        this.mode = mode;
    }

    public String describe() {
        return "anti-entropy " + NAMES[mode];
    }

    public TrialResult run(int trial, int n, Update u, Network net, EventLog log, int maxRounds) {
        boolean[] knows = new boolean[n];
        knows[u.origin] = true;
        log.deliver(trial, 0, u.origin, u);
        int informed = 1;
        long sent0 = net.sent();
        int round = 0;
        while (informed < n && round < maxRounds) {
            round++;
            boolean[] next = (boolean[]) knows.clone();
            for (int i = 0; i < n; i++) {
                int p = net.randomPeer(i);
                if (mode == PUSH) {
                    if (net.send() && knows[i] && !next[p]) {
                        next[p] = true;
                        informed++;
                        log.deliver(trial, round, p, u);
                    }
                } else if (mode == PULL) {
                    // request, then the peer's answer
                    if (net.send() && net.send() && knows[p] && !next[i]) {
                        next[i] = true;
                        informed++;
                        log.deliver(trial, round, i, u);
                    }
                } else {
                    if (net.send()) {
                        if (knows[i] && !next[p]) {
                            next[p] = true;
                            informed++;
                            log.deliver(trial, round, p, u);
                        }
                        if (net.send() && knows[p] && !next[i]) {
                            next[i] = true;
                            informed++;
                            log.deliver(trial, round, i, u);
                        }
                    }
                }
            }
            knows = next;
        }
        TrialResult r = new TrialResult();
        r.rounds = round;
        r.informed = informed;
        r.messages = net.sent() - sent0;
        r.finished = informed == n;
        return r;
    }
}
