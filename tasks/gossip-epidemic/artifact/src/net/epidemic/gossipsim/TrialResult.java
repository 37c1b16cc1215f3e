package net.epidemic.gossipsim;

/** Outcome of one trial of one protocol. */
public class TrialResult {
    /** rounds until full dissemination (anti-entropy) or quiescence (rumor mongering) */
    public int rounds;
    /** nodes that know the update at the end */
    public int informed;
    /** messages sent, including lost ones */
    public long messages;
    /** false if the trial hit max.rounds */
    public boolean finished;
}
