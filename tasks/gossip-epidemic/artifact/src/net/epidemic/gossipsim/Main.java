package net.epidemic.gossipsim;

import java.io.File;
import java.io.FileInputStream;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Random;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.CommandLineParser;
import org.apache.commons.cli.GnuParser;
import org.apache.commons.cli.HelpFormatter;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

/**
 * gossipsim driver: runs the experiments of a configuration file and writes
 * one CSV row per run.
 *
 *   java -jar dist/gossipsim.jar -c conf/table1.properties -o results/table1.csv
 */
public class Main {

    static final String HEADER =
        "run,protocol,nodes,loss,trials,mean_rounds,max_rounds,msgs_per_node,residue,unfinished,log_head";

    public static void main(String[] args) throws Exception {
        Options opts = new Options();
        opts.addOption("c", "config", true, "experiment configuration (.properties)");
        opts.addOption("o", "out", true, "write the CSV here (default: stdout)");
        opts.addOption("s", "seed", true, "override the seed of the configuration");
        opts.addOption("r", "run", true, "only this run of the configuration");
        opts.addOption("v", "verbose", false, "print every run's description");
        opts.addOption("h", "help", false, "this help");

        CommandLineParser parser = new GnuParser();
        CommandLine cl;
        try {
            cl = parser.parse(opts, args);
        } catch (ParseException e) {
            System.err.println("gossipsim: " + e.getMessage());
            new HelpFormatter().printHelp("gossipsim -c CONFIG [-o OUT]", opts);
            System.exit(2);
            return;
        }
        if (cl.hasOption("h") || !cl.hasOption("c")) {
            new HelpFormatter().printHelp("gossipsim -c CONFIG [-o OUT]", opts);
            System.exit(cl.hasOption("h") ? 0 : 2);
        }

        Properties conf = new Properties();
        InputStream in = new FileInputStream(cl.getOptionValue("c"));
        try {
            conf.load(in);
        } finally {
            in.close();
        }
        long seed = Long.parseLong(cl.getOptionValue("s", conf.getProperty("seed", "1987")).trim());

        List<String> rows = new ArrayList<String>();
        String[] runs = conf.getProperty("runs", "").split(",");
        int index = 0;
        for (int j = 0; j < runs.length; j++) {
            String run = runs[j].trim();
            if (run.length() == 0)
                continue;
            index++;
            if (cl.hasOption("r") && !cl.getOptionValue("r").equals(run))
                continue;
            String spec = conf.getProperty("run." + run);
            if (spec == null)
                throw new IllegalArgumentException("no run." + run + " in " + cl.getOptionValue("c"));
            Properties p = new Properties();
            for (String kv : spec.trim().split("\\s+")) {
                int eq = kv.indexOf('=');
                if (eq < 0)
                    throw new IllegalArgumentException("run." + run + ": bad setting " + kv);
                p.setProperty(kv.substring(0, eq), kv.substring(eq + 1));
            }
            rows.add(runOne(run, index, p, conf, seed, cl.hasOption("v")));
        }

        PrintWriter out;
        if (cl.hasOption("o")) {
            File f = new File(cl.getOptionValue("o"));
            if (f.getParentFile() != null)
                f.getParentFile().mkdirs();
            out = new PrintWriter(new FileWriter(f));
        } else {
            out = new PrintWriter(System.out);
        }
        out.println(HEADER);
        for (String r : rows)
            out.println(r);
        out.close();
    }

    static String setting(Properties run, Properties conf, String key, String dflt) {
        String v = run.getProperty(key);
        if (v == null)
            v = conf.getProperty(key, dflt);
        return v.trim();
    }

    static String runOne(String name, int index, Properties p, Properties conf, long seed, boolean verbose)
            throws IOException {
        int n = Integer.parseInt(setting(p, conf, "nodes", "1000"));
        int trials = Integer.parseInt(setting(p, conf, "trials", "20"));
        int maxRounds = Integer.parseInt(setting(p, conf, "max.rounds", "500"));
        double loss = Double.parseDouble(setting(p, conf, "loss", "0.0"));
        Protocol proto = Protocol.create(p);
        if (verbose)
            System.err.println(name + ": " + proto.describe() + ", n=" + n + ", loss=" + loss);

        // one stream per run, so that runs can be repeated one at a time (-r)
        Random rnd = new Random(seed * 1000003L + index);
        Network net = new Network(n, loss, rnd);
        EventLog log = new EventLog();

        long rounds = 0, msgs = 0, missing = 0;
        int maxR = 0, unfinished = 0;
        for (int t = 0; t < trials; t++) {
            byte[] uid = new byte[12];
            rnd.nextBytes(uid);
            Update u = new Update(rnd.nextInt(n), 0, uid);
            TrialResult r = proto.run(t, n, u, net, log, maxRounds);
            rounds += r.rounds;
            msgs += r.messages;
            missing += n - r.informed;
            if (r.rounds > maxR)
                maxR = r.rounds;
            if (!r.finished)
                unfinished++;
        }
        return String.format(Locale.US, "%s,%s,%d,%.2f,%d,%.3f,%d,%.4f,%.6f,%d,%s",
                name, p.getProperty("protocol") + (p.getProperty("variant") != null
                        ? "/" + p.getProperty("variant") + "/k=" + p.getProperty("k", "1") : ""),
                n, loss, trials, (double) rounds / trials, maxR,
                (double) msgs / ((double) trials * n), (double) missing / ((double) trials * n),
                unfinished, log.head());
    }
}
