#!/usr/bin/perl
# The hidden pipeline of a cleanroom task, exported for Harbor by
# `cleanroom tasks export harbor`: runs the steps of checks.json as
# cleanroom runs them, judges every check as cleanroom judges it, and
# writes the reward, 1 only when every step and every check passed and no
# protected file of the artifact was changed. It needs perl-base alone
# (Essential in every Debian image; python3 is not in cleanroom's).
#
#   checks.pl checks.json
#       the pipeline; verify.log and reward.txt go to /logs/verifier
#   checks.pl checks.json --judge OUT STDOUTS
#       the checks alone, on the outputs in OUT and the standard output of
#       step N (from 1) in STDOUTS/N; exits 0 when every check passes
use strict;
use warnings;
use feature 'unicode_strings';
use POSIX ();
use Fcntl qw(O_RDONLY O_WRONLY O_CREAT O_TRUNC O_NOFOLLOW S_IFMT S_IFREG S_IFDIR S_IFLNK);

my $READ_LIMIT = 64 << 20;
my $SHOWN_CHARS = 256;
my $LOGGED_OUTPUT = 1 << 20;    # bytes of a step's output logged from its head, and from its tail
my $LOGS = '/logs/verifier';
my $STEP_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
my %BASE_ENV = (PATH => $STEP_PATH, HOME => '/root', LANG => 'C.UTF-8', TERM => 'dumb');
my $LOGIN_TIMEOUT = 60;
my $LOGIN_MARKER = "\0cleanroom-login-env\0";
my $LOGIN_SCRIPT =
  q{printf '\0cleanroom-login-env\0'; for n in $(compgen -e); do printf '%s=%s\0' "$n" "${!n}"; done};
# Variables of the login environment that make a shell or an interpreter
# run code at start-up: a step does not get them (cleanroom's
# UNTRUSTED_VARIABLES).
my %UNTRUSTED = map { $_ => 1 } qw(
  BASH_ENV ENV PROMPT_COMMAND PS0 PS4 SHELLOPTS BASHOPTS CDPATH GLOBIGNORE IFS
  LD_PRELOAD LD_AUDIT PYTHONSTARTUP PYTHONINSPECT PYTHONUSERBASE PERL5OPT PERL5DB
  RUBYOPT NODE_OPTIONS JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS);

my $log;

sub say_log {
    my ($line) = @_;
    utf8::encode($line) if utf8::is_utf8($line);
    print $log "$line\n" if $log;
    print STDOUT "$line\n";
}


sub main {
    my ($spec_path, $mode, $out, $stdouts) = @_;
    die "usage: checks.pl checks.json [--judge OUT STDOUTS]\n" unless defined $spec_path;
    binmode STDOUT;
    my $spec = json_parse(decode_utf8(slurp($spec_path), 0) // die "$spec_path: not UTF-8\n");
    if (defined $mode) {
        die "usage: checks.pl checks.json --judge OUT STDOUTS\n" unless $mode eq '--judge' && defined $stdouts;
        my %stdout;
        for my $n (1 .. @{ $spec->{steps} }) {
            $stdout{$n} = slurp("$stdouts/$n") if -f "$stdouts/$n";
        }
        exit(judge($spec, $out, \%stdout) ? 0 : 1);
    }
    # verify/'s files lie beside checks.json, in verify/.
    my $verify = ($spec_path =~ m{^(.*)/[^/]*\z} ? $1 : '.') . '/verify';
    pipeline($spec, $verify);
}

# ---- the pipeline

sub pipeline {
    my ($spec, $verify) = @_;
    mkdir $LOGS;
    write_file("$LOGS/reward.txt", "0\n");
    open($log, '>', "$LOGS/verify.log") or die "$LOGS/verify.log: $!\n";
    binmode $log;
    $log->autoflush(1);
    my $start = time;
    my @steps = @{ $spec->{steps} };
    my $timeout = number($spec->{timeout_sec});
    say_log(sprintf('cleanroom verify: %d steps, %d checks, %ds in all',
        scalar @steps, scalar @{ $spec->{checks} }, $timeout));
    my $tampered = tampered($spec);
    my $vars = login_variables(min($LOGIN_TIMEOUT, $timeout));
    my $out = fresh_dir();
    my $work = fresh_dir();
    my $dest = $spec->{artifact};
    $vars->{TERM} = 'dumb';
    $vars->{CLEANROOM_OUT} = $out;
    $vars->{CLEANROOM_VERIFY} = $verify;
    $vars->{CLEANROOM_ARTIFACT} = $dest;

    my (%stdout, $stopped, $mutated);
    my $passed = 1;
    for my $n (1 .. @steps) {
        my $step = $steps[ $n - 1 ];
        say_log("== step $n/" . @steps . ": $step->{name} ($step->{stage})");
        say_log("\$ $step->{run}");
        if ($stopped) {
            say_log('-- not run: an earlier step failed');
            next;
        }
        $stopped = 1;
        $passed = 0;
        if (is_true($step->{mutated}) && !$mutated) {
            $mutated = 1;
            my $why = mutate($dest, $spec->{mutations});
            if ($why) {
                say_log("-- failed: mutation: $why");
                next;
            }
        }
        my $why = clean($dest, $step->{clean});
        if ($why) {
            say_log("-- failed: clean: $why");
            next;
        }
        my $left = $timeout - (time - $start);
        if ($left <= 0) {
            say_log('-- timed out: verify.timeout_sec ran out before this step');
            next;
        }
        my $limit = defined $step->{timeout_sec} ? min(number($step->{timeout_sec}), $left) : $left;
        my ($status, $seconds) = run_step($step->{run}, $dest, $vars, $limit, "$work/$n");
        my ($exit, $signal) = ($status >> 8, $status & 127);
        # timeout's own codes: 124, or 137 when it had to kill.
        my $timed_out = $exit == 124 || $exit == 137 && $seconds >= $limit;
        my $how = $timed_out ? "no exit within ${limit}s" : $signal ? "killed by signal $signal" : "exit $exit";
        my $result = $status == 0 ? 'passed' : $timed_out ? 'timed out' : 'failed';
        say_log("-- $result: $how after ${seconds}s");
        for my $part ('stdout', 'stderr') {
            my $text = slurp("$work/$n.$part");
            next if $text eq '';
            # A bounded head and tail, as cleanroom keeps.
            my $cut = length($text) - 2 * $LOGGED_OUTPUT;
            substr($text, $LOGGED_OUTPUT, $cut) = "\n... ($cut bytes cut)\n" if $cut > 0;
            $text .= "\n" unless $text =~ /\n\z/;
            print $log $text;
            print STDOUT $text;
        }
        $stdout{$n} = slurp("$work/$n.stdout");
        next unless $status == 0;
        ($stopped, $passed) = (0, 1);
    }
    say_log('== checks');
    my $checked = judge($spec, $out, \%stdout);
    my $reward = $passed && $checked && !$tampered ? 1 : 0;
    say_log('== verdict: ' . ($reward ? 'passed' : 'failed') . ($tampered ? ' (protected files changed)' : ''));
    write_file("$LOGS/reward.txt", "$reward\n");
}

sub min { my ($a, $b) = @_; $a < $b ? $a : $b }

sub is_true { my ($v) = @_; ref $v eq 'JsonLiteral' && $$v eq 'true' }

# The deployment's login environment: a login shell prints its exported
# variables; those that inject code are left out. The defaults when the
# shell did not report them.
sub login_variables {
    my ($limit) = @_;
    my $pid = open(my $fh, '-|') // die "fork: $!\n";
    if ($pid == 0) {
        chdir '/';
        %ENV = %BASE_ENV;
        open(STDIN, '<', '/dev/null');
        open(STDERR, '>', '/dev/null');
        exec('timeout', '-k', '5', $limit, '/bin/bash', '-lc', $LOGIN_SCRIPT) or POSIX::_exit(127);
    }
    binmode $fh;
    my $printed = do { local $/; <$fh> } // '';
    close $fh;
    my $at = rindex($printed, $LOGIN_MARKER);
    my %vars;
    if ($? == 0 && $at >= 0) {
        for my $item (split /\0/, substr($printed, $at + length $LOGIN_MARKER)) {
            my ($name, $value) = $item =~ /^([A-Za-z0-9_]+)=(.*)\z/s or next;
            next if $UNTRUSTED{$name} || $name =~ /^BASH_FUNC_/ || $name =~ /^CLEANROOM_/;
            $vars{$name} = $value;
        }
    }
    if (!defined $vars{PATH}) {
        say_log('login environment: not reported; steps get the default one');
        return {%BASE_ENV};
    }
    say_log('login environment: ' . (keys %vars) . ' variables');
    return \%vars;
}

# A new directory /.cleanroom-<32 hex digits>.
sub fresh_dir {
    open(my $random, '<', '/dev/urandom') or die "/dev/urandom: $!\n";
    read($random, my $bytes, 16) == 16 or die "/dev/urandom: short read\n";
    my $dir = '/.cleanroom-' . unpack('H*', $bytes);
    mkdir($dir, 0755) or die "$dir: $!\n";
    return $dir;
}

# One step: bash without profile or rc files, in the artifact, with the
# login environment, stdin from /dev/null, within `timeout`. Returns the
# wait status and the seconds it took.
sub run_step {
    my ($run, $dest, $vars, $limit, $prefix) = @_;
    my $start = time;
    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        open(STDIN, '<', '/dev/null');
        open(STDOUT, '>', "$prefix.stdout");
        open(STDERR, '>', "$prefix.stderr");
        chdir $dest or do { print STDERR "cd $dest: $!\n"; POSIX::_exit(1) };
        my $timeout = -x '/usr/bin/timeout' ? '/usr/bin/timeout' : 'timeout';
        %ENV = %$vars;
        exec($timeout, '-k', '5', $limit, '/bin/bash', '--noprofile', '--norc', '-c', $run) or POSIX::_exit(127);
    }
    waitpid($pid, 0);
    return ($?, time - $start);
}

# Every [[mutation]], applied to the artifact: each file must hold its
# text exactly once; the new contents get mode 0644. The reason it failed,
# if it did.
sub mutate {
    my ($dest, $mutations) = @_;
    say_log('== mutations: ' . @$mutations);
    my $i = 0;
    for my $m (@$mutations) {
        $i++;
        my $path = "$dest/$m->{file}";
        my ($bytes, $why) = read_regular($path);
        return "$m->{file}: $why" if defined $why;
        return "$m->{file}: not UTF-8 text" unless defined decode_utf8($bytes, 0);
        my ($replace, $with) = ($m->{replace}, $m->{with});
        utf8::encode($replace);
        utf8::encode($with);
        my ($found, $at) = (0, 0);
        while (($at = index($bytes, $replace, $at)) >= 0) {
            $found++;
            $at += length $replace;
        }
        return "$m->{file}: mutation $i found its text $found times, not once" if $found != 1;
        my $start = index($bytes, $replace);
        substr($bytes, $start, length $replace) = $with;
        sysopen(my $fh, $path, O_WRONLY | O_TRUNC | O_NOFOLLOW) or return "$m->{file}: $!";
        print $fh $bytes;
        close $fh or return "$m->{file}: $!";
        chmod 0644, $path;
        say_log("mutation $i: $m->{file} changed");
    }
    return undef;
}

# Removes every path under the artifact that a `clean` glob matches (a
# directory with all it holds), never following a link. The reason it
# failed, if it did.
sub clean {
    my ($dest, $globs) = @_;
    return undef unless @$globs;
    my @patterns = map { qr/$_->{regex}/ } @$globs;
    my @literals = map { [ map { my $s = $_; utf8::encode($s); $s } @{ $_->{literal} } ] } @$globs;
    my @removed;
    my @dirs = ('');
    return undef unless kind_of_nofollow($dest) eq 'dir';
    while (@dirs) {
        my $rel = shift @dirs;
        my $dir = $rel eq '' ? $dest : "$dest/$rel";
        opendir(my $dh, $dir) or return "$rel: $!";
        my @names = grep { $_ ne '.' && $_ ne '..' } readdir $dh;
        closedir $dh;
        for my $name (sort @names) {
            my $child = $rel eq '' ? $name : "$rel/$name";
            my @st = lstat "$dest/$child" or next;
            my $is_dir = ($st[2] & S_IFMT) == S_IFDIR;
            if (grep { $child =~ $_ } @patterns) {
                my $why = remove_tree("$dest/$child");
                return "$child: $why" if $why;
                push @removed, $child;
            } elsif ($is_dir && may_match_below($child, \@literals)) {
                push @dirs, $child;
            }
        }
    }
    say_log("clean: removed $_") for @removed[ 0 .. min(scalar @removed, 20) - 1 ];
    say_log('clean: ... and ' . (@removed - 20) . ' more') if @removed > 20;
    say_log('clean: nothing to remove') unless @removed;
    return undef;
}

# Could a path below `dir` match? Not when no glob's literal leading
# segments lead into it.
sub may_match_below {
    my ($dir, $literals) = @_;
    my @parts = grep { $_ ne '' } split m{/}, $dir;
    for my $literal (@$literals) {
        my $n = min(scalar @$literal, scalar @parts);
        return 1 unless grep { $literal->[$_] ne $parts[$_] } 0 .. $n - 1;
    }
    return 0;
}

sub remove_tree {
    my ($path) = @_;
    my @st = lstat $path or return undef;
    if (($st[2] & S_IFMT) != S_IFDIR) {
        return unlink($path) || $!{ENOENT} ? undef : "$!";
    }
    opendir(my $dh, $path) or return "$!";
    my @names = grep { $_ ne '.' && $_ ne '..' } readdir $dh;
    closedir $dh;
    for my $name (@names) {
        my $why = remove_tree("$path/$name");
        return $why if $why;
    }
    return rmdir($path) ? undef : "$!";
}

# Originals of the artifact under `verify.protected` that are gone or
# changed in type, mode, bytes or link target (cleanroom's tampering).
sub tampered {
    my ($spec) = @_;
    my @changed;
    for my $entry (@{ $spec->{protected} }) {
        my $path = "$spec->{artifact}/$entry->{path}";
        my $kind = kind_of_nofollow($path);
        my $how = $kind eq 'none' ? 'gone' : $kind ne $entry->{kind} ? "now a $kind" : undef;
        if (!defined $how) {
            my $mode = (lstat $path)[2] & 07777;
            if ($mode != number($entry->{mode})) {
                $how = sprintf('mode %04o, was %04o', $mode, number($entry->{mode}));
            } elsif ($kind eq 'file' && sha256_of($path) ne $entry->{sha256}) {
                $how = 'bytes changed';
            } elsif ($kind eq 'link') {
                my $target = readlink $path;
                my $was = $entry->{target};
                utf8::encode($was);
                $how = 'target changed' if $target ne $was;
            }
        }
        push @changed, "$entry->{path} ($how)" if defined $how;
    }
    say_log("tampered: $_") for @changed;
    return scalar @changed;
}

sub sha256_of {
    my ($path) = @_;
    open(my $fh, '-|', 'sha256sum', '--', $path) or return '';
    my $line = <$fh> // '';
    close $fh;
    return $line =~ /^([0-9a-f]{64})/ ? $1 : '';
}

# The kind of what is at `path`, no link followed anywhere on the way:
# file, dir, link, other, or none.
sub kind_of_nofollow {
    my ($path) = @_;
    my @parts = grep { $_ ne '' } split m{/}, $path;
    my $at = '';
    for my $i (0 .. $#parts) {
        $at .= "/$parts[$i]";
        my @st = lstat $at or return 'none';
        my $type = $st[2] & S_IFMT;
        if ($i == $#parts) {
            return $type == S_IFREG ? 'file' : $type == S_IFDIR ? 'dir' : $type == S_IFLNK ? 'link' : 'other';
        }
        return 'none' unless $type == S_IFDIR;
    }
    return 'dir';
}

# The bytes of the regular file at `path`, no link followed anywhere on the
# way, at most READ_LIMIT; or why not, as cleanroom says it.
sub read_regular {
    my ($path) = @_;
    my $at = '';
    my @parts = grep { $_ ne '' } split m{/}, $path;
    for my $i (0 .. $#parts) {
        my @st = lstat "$at/$parts[$i]" or return (undef, 'missing');
        my $type = $st[2] & S_IFMT;
        $at .= "/$parts[$i]";
        return (undef, 'symlink in path') if $type == S_IFLNK;
        next if $i == $#parts;
        return (undef, 'missing') unless $type == S_IFDIR;
    }
    my @st = lstat $path;
    return (undef, 'not a regular file') unless ($st[2] & S_IFMT) == S_IFREG;
    return (undef, "too large: $st[7] bytes") if $st[7] > $READ_LIMIT;
    sysopen(my $fh, $path, O_RDONLY | O_NOFOLLOW) or return (undef, "$!");
    binmode $fh;
    my $bytes = do { local $/; <$fh> } // '';
    return (undef, 'too large: ' . length($bytes) . ' bytes') if length $bytes > $READ_LIMIT;
    return ($bytes, undef);
}

# ---- the checks

# Judges every check, logging each; true when all passed.
sub judge {
    my ($spec, $out, $stdout) = @_;
    my %step_number;
    my $n = 0;
    $step_number{ $_->{name} } = ++$n for @{ $spec->{steps} };
    my $all = 1;
    for my $check (@{ $spec->{checks} }) {
        my ($bytes, $why);
        if (defined $check->{stdout}) {
            $bytes = $stdout->{ $step_number{ $check->{stdout} } // 0 };
            $why = 'missing' unless defined $bytes;
        } else {
            ($bytes, $why) = read_regular("$out/" . ($check->{file} =~ s{^/+}{}r));
        }
        my ($passed, $observed) = defined $why ? (0, $why) : evaluate($check, $bytes);
        $all &&= $passed;
        say_log(($passed ? 'PASS' : 'FAIL') . " $check->{name}: expected "
              . shorten($check->{expected}) . ', observed ' . shorten($observed));
    }
    return $all;
}

sub evaluate {
    my ($check, $bytes) = @_;
    my $compare = $check->{compare};
    return (1, 'a regular file of ' . length($bytes) . ' bytes') if is_true($compare->{exists});
    my ($value, $why) = select_value($check, $bytes);
    return (0, $why) if defined $why;
    if (defined $compare->{equals}) {
        my $text = as_text($value);
        return ($text eq $compare->{equals} ? 1 : 0, $text);
    }
    my ($observed, $not) = as_number($value);
    return (0, $not) if defined $not;
    my $shown = ref $value ? json_text($value) : $value =~ s/^\s+|\s+$//gr;
    if (defined $compare->{range}) {
        my ($lo, $hi) = map { number($_) } @{ $compare->{range} };
        return ($observed == $observed && $lo <= $observed && $observed <= $hi ? 1 : 0, $shown);
    }
    my $abs = defined $compare->{abs_tol} ? number($compare->{abs_tol}) : undef;
    my $rel = defined $compare->{rel_tol} ? number($compare->{rel_tol}) : undef;
    return (within($observed, number($compare->{expect}), $abs, $rel) ? 1 : 0, $shown);
}

# |obs - expect| <= max(abs_tol, rel_tol * |expect|), with a slack of a
# few units in the last place; no tolerance means exact equality; NaN
# never passes; infinities pass only by equality (cleanroom's `within`).
sub within {
    my ($obs, $expect, $abs, $rel) = @_;
    return 0 if $obs != $obs || $expect != $expect;
    return 1 if $obs == $expect;
    return 0 if !defined $abs && !defined $rel;
    return 0 if !finite($obs) || !finite($expect);
    my $tol = $abs // 0;
    $tol = $rel * abs($expect) if defined $rel && $rel * abs($expect) > $tol;
    my $slack = 4 * 2**-52 * (abs($obs) > abs($expect) ? abs($obs) : abs($expect));
    return abs($obs - $expect) <= $tol + $slack;
}

sub finite { my ($x) = @_; $x == $x && $x - $x == 0 }

# The selected value: text (a Perl string) or a JSON value that is not a
# string; or why there is none.
sub select_value {
    my ($check, $bytes) = @_;
    if (defined $check->{json}) {
        my $text = decode_utf8($bytes, 0);
        return (undef, 'not json: invalid UTF-8') unless defined $text;
        my $doc = eval { json_parse($text) };
        if ($@) {
            (my $why = $@) =~ s/\n\z//;
            return (undef, "not json: $why");
        }
        my ($found, $ok) = json_pointer($doc, $check->{json});
        return (undef, sprintf('no match: nothing at %s', debug_text($check->{json}))) unless $ok;
        return ($found, undef);
    }
    my $text = decode_utf8($bytes, 1);
    if (defined $check->{regex}) {
        my $re = eval { qr/$check->{regex}/mu };
        return (undef, "bad pattern: $@") unless $re;
        my @groups = $text =~ $re or return (undef, 'no match');
        return (undef, 'no match: the first match did not set group 1') unless defined $groups[0];
        return ($groups[0], undef);
    }
    return select_csv($check->{csv}, $bytes) if defined $check->{csv};
    return ($text, undef);
}

sub json_pointer {
    my ($doc, $pointer) = @_;
    return ($doc, 1) if $pointer eq '';
    return (undef, 0) unless $pointer =~ s{^/}{};
    for my $token (split m{/}, $pointer, -1) {
        $token =~ s/~1/\//g;
        $token =~ s/~0/~/g;
        if (ref $doc eq 'HASH') {
            return (undef, 0) unless exists $doc->{$token};
            $doc = $doc->{$token};
        } elsif (ref $doc eq 'ARRAY') {
            return (undef, 0) unless $token =~ /^(?:0|[1-9][0-9]*)\z/ && $token < @$doc;
            $doc = $doc->[$token];
        } else {
            return (undef, 0);
        }
    }
    return ($doc, 1);
}

# RFC 4180 as the csv crate reads it, with a header record: records end at
# CR or LF outside quotes, empty lines are skipped, records may differ in
# length. Header names and row-match text compare trimmed.
sub select_csv {
    my ($csv, $bytes) = @_;
    my $delimiter = $csv->{delimiter};
    my @records = csv_records($bytes, $delimiter);
    my $header = shift(@records) // [];
    my $find = sub {
        my ($name) = @_;
        for my $i (0 .. $#$header) { return $i if trim($header->[$i]) eq trim($name) }
        return undef;
    };
    return (undef, 'bad csv: invalid UTF-8 in the header') if grep { !defined } @$header;
    my $col = $find->($csv->{column});
    return (undef, sprintf('no match: no column %s in the header', debug_text($csv->{column})))
      unless defined $col;
    my ($index, $record);
    if (ref $csv->{row} eq 'HASH') {
        my ($key, $text) = ($csv->{row}{column}, $csv->{row}{text});
        my $key_col = $find->($key);
        return (undef, sprintf('no match: no column %s in the header', debug_text($key))) unless defined $key_col;
        for my $i (0 .. $#records) {
            return (undef, 'bad csv: invalid UTF-8') if grep { !defined } @{ $records[$i] };
            my $cell = $records[$i][$key_col];
            if (defined $cell && trim($cell) eq trim($text)) {
                ($index, $record) = ($i, $records[$i]);
                last;
            }
        }
        return (undef, sprintf('no match: no row where %s = %s', $key, debug_text($text))) unless $record;
    } else {
        $index = number($csv->{row});
        for my $i (0 .. min($index, scalar(@records) - 1)) {
            return (undef, 'bad csv: invalid UTF-8') if grep { !defined } @{ $records[$i] };
        }
        return (undef, sprintf('no match: no data row %d (the file has %d data rows)', $index, scalar @records))
          if $index >= @records;
        $record = $records[$index];
    }
    my $cell = $record->[$col];
    return (undef, sprintf('no match: data row %d has no column %s', $index, debug_text($csv->{column})))
      unless defined $cell;
    return ($cell, undef);
}

# The records of a CSV file, each a list of fields decoded from UTF-8
# (undef where a field is not UTF-8), as csv_core's machine reads them.
sub csv_records {
    my ($bytes, $delimiter) = @_;
    my $d = quotemeta $delimiter;
    my @records;
    pos($bytes) = 0;
    while (1) {
        $bytes =~ /\G[\r\n]*/gc;
        last if pos($bytes) >= length $bytes;
        my @fields;
        while (1) {
            my $field = '';
            if ($bytes =~ /\G"/gc) {
                # Quoted: "" is a quote; after the closing quote, the rest
                # up to the delimiter is taken as it is.
                while (1) {
                    $bytes =~ /\G([^"]*)/gc;
                    $field .= $1;
                    last unless $bytes =~ /\G"/gc;
                    last unless $bytes =~ /\G"/gc;
                    $field .= '"';
                }
            }
            $bytes =~ /\G([^$d\r\n]*)/gc;
            $field .= $1;
            push @fields, decode_utf8($field, 0);
            next if $bytes =~ /\G$d/gc;
            $bytes =~ /\G[\r\n]/gc;
            last;
        }
        push @records, \@fields;
    }
    return @records;
}

# ---- values

# The value as `equals` sees it: text verbatim, other JSON compact.
sub as_text { my ($value) = @_; ref $value ? json_text($value) : $value }

# The value as a number (Rust's f64 parsing of trimmed text, a JSON
# number's value); or why it is none.
sub as_number {
    my ($value) = @_;
    if (ref $value eq 'JsonNumber') { return ((json_number($$value))[0], undef) }
    return (undef, 'not a number: ' . json_text($value)) if ref $value;
    my $text = trim($value);
    return (undef, 'not a number: ' . debug_text(shorten($value)))
      unless $text =~ /^[+-]?(?:inf|infinity|nan|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?)\z/i;
    return (number($text), undef);
}

# A number from checks.json or a selected text, correctly rounded.
sub number {
    my ($v) = @_;
    my $text = ref $v ? $$v : $v;
    return 9**9**9 * ($text =~ /^-/ ? -1 : 1) if $text =~ /^[+-]?inf/i;
    return -sin(9**9**9) if $text =~ /^[+-]?nan/i;
    my ($n) = POSIX::strtod($text);
    return $n;
}

sub trim { my ($s) = @_; $s =~ s/^\s+|\s+$//gr }

# At most SHOWN_CHARS characters, with a marker when cut.
sub shorten {
    my ($s) = @_;
    return $s if length $s <= $SHOWN_CHARS;
    my $bytes = $s;
    utf8::encode($bytes);
    return substr($s, 0, $SHOWN_CHARS) . '... (' . length($bytes) . ' bytes in all)';
}

# A string quoted as Rust's {:?} writes it.
sub debug_text {
    my ($s) = @_;
    my %named = ("\t" => '\t', "\n" => '\n', "\r" => '\r', '"' => '\"', '\\' => '\\\\', "\0" => '\0');
    $s =~ s/([\x00-\x1F"\\\x7F])/$named{$1} \/\/ sprintf('\u{%x}', ord $1)/ge;
    return "\"$s\"";
}

# ---- JSON, as serde_json reads and writes it

sub json_parse {
    my ($text) = @_;
    my $value = json_value(\$text, 128);
    $text =~ /\G[ \t\n\r]*/gc;
    die 'trailing characters at ' . pos($text) . "\n" if pos($text) < length $text;
    return $value;
}

sub json_value {
    my ($t, $depth) = @_;
    $$t =~ /\G[ \t\n\r]*/gc;
    return json_string($t) if $$t =~ /\G"/gc;
    if ($$t =~ /\G(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)(?![0-9])/gc) {
        my $n = $1;
        json_number($n);
        return bless \$n, 'JsonNumber';
    }
    if ($$t =~ /\G(true|false|null)/gc) {
        my $literal = $1;
        return bless \$literal, 'JsonLiteral';
    }
    $$t =~ /\G([\[{])/gc or die 'expected value at ' . (pos($$t) // 0) . "\n";
    my $open = $1;
    die "recursion limit exceeded\n" if --$depth == 0;
    my $array = $open eq '[';
    my ($close, @items, %members) = $array ? ']' : '}';
    $$t =~ /\G[ \t\n\r]*/gc;
    return $array ? \@items : \%members if $$t =~ /\G\Q$close\E/gc;
    while (1) {
        if ($array) {
            push @items, json_value($t, $depth);
        } else {
            $$t =~ /\G[ \t\n\r]*"/gc or die 'expected a key at ' . pos($$t) . "\n";
            my $key = json_string($t);
            $$t =~ /\G[ \t\n\r]*:/gc or die 'expected `:` at ' . pos($$t) . "\n";
            $members{$key} = json_value($t, $depth);
        }
        $$t =~ /\G[ \t\n\r]*/gc;
        next if $$t =~ /\G,/gc;
        return $array ? \@items : \%members if $$t =~ /\G\Q$close\E/gc;
        die "expected `,` or `$close` at " . pos($$t) . "\n";
    }
}

my %JSON_ESCAPES = ('"' => '"', '\\' => '\\', '/' => '/', b => "\b", f => "\f", n => "\n", r => "\r", t => "\t");

sub json_string {
    my ($t) = @_;
    my $s = '';
    while (1) {
        if ($$t =~ /\G([^"\\\x00-\x1F]+)/gc) { $s .= $1; next }
        return $s if $$t =~ /\G"/gc;
        if ($$t =~ /\G\\(["\\\/bfnrt])/gc) { $s .= $JSON_ESCAPES{$1}; next }
        if ($$t =~ /\G\\u([0-9A-Fa-f]{4})/gc) {
            my $code = hex $1;
            if ($code >= 0xD800 && $code <= 0xDBFF) {
                $$t =~ /\G\\u([dD][c-fC-F][0-9A-Fa-f]{2})/gc or die "lone leading surrogate in hex escape\n";
                $code = 0x10000 + (($code - 0xD800) << 10) + (hex($1) - 0xDC00);
            } elsif ($code >= 0xDC00 && $code <= 0xDFFF) {
                die "lone trailing surrogate in hex escape\n";
            }
            $s .= chr $code;
            next;
        }
        die 'invalid string at ' . pos($$t) . "\n";
    }
}

# Compact JSON text, as serde_json writes a value: keys sorted, numbers as
# their integer or shortest round-trip form.
sub json_text {
    my ($v) = @_;
    my $type = ref $v;
    return json_quote($v) unless $type;
    return $$v if $type eq 'JsonLiteral';
    return json_number_text($$v) if $type eq 'JsonNumber';
    return '[' . join(',', map { json_text($_) } @$v) . ']' if $type eq 'ARRAY';
    return '{' . join(',', map { json_quote($_) . ':' . json_text($v->{$_}) } sort keys %$v) . '}';
}

sub json_quote {
    my ($s) = @_;
    my %named = ('"' => '\"', '\\' => '\\\\', "\b" => '\b', "\f" => '\f', "\n" => '\n', "\r" => '\r', "\t" => '\t');
    $s =~ s/([\x00-\x1F"\\])/$named{$1} \/\/ sprintf('\u%04x', ord $1)/ge;
    return "\"$s\"";
}

my @POW10 = map { (POSIX::strtod("1e$_"))[0] } 0 .. 308;
my $U64_TENTH = 1844674407370955161;    # u64::MAX / 10; u64::MAX % 10 is 5

# A JSON number as serde_json reads it (without its float_roundtrip
# feature, as cleanroom is built): the digits as a 64-bit integer, those
# past its range dropped, then times or divided by a power of ten, which is
# at times an ulp off the correctly rounded value. Returns the value and
# whether serde_json keeps it as an integer; dies when out of range.
sub json_number {
    my ($literal) = @_;
    my ($minus, $int, $frac, $exp) = $literal =~ /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([-+]?[0-9]+))?\z/;
    my ($sig, $e10, $long) = (0, 0, 0);
    for my $d (split //, $int) {
        $long ||= $sig > $U64_TENTH || $sig == $U64_TENTH && $d > 5;
        if ($long) { $e10++ } else { $sig = $sig * 10 + $d }
    }
    # The value rounded to a double before any arithmetic, as `as f64`.
    my $f = unpack('d', pack('d', $sig));
    if (!$long && !defined $frac && !defined $exp) {
        # -0, and below i64's range, are floats.
        my $integer = !$minus || $sig != 0 && $sig <= 9223372036854775808;
        return ($minus ? -$f : $f, $integer);
    }
    for my $d (split //, $frac // '') {
        last if $sig > $U64_TENTH || $sig == $U64_TENTH && $d > 5;
        $sig = $sig * 10 + $d;
        $e10--;
    }
    $f = unpack('d', pack('d', $sig));
    if (defined $exp) {
        my ($sign, $digits) = $exp =~ /^([-+]?)([0-9]+)\z/;
        my $e = 0;
        for my $d (split //, $digits) {
            if ($e > 214748364 || $e == 214748364 && $d > 7) {    # past i32
                die "number out of range\n" if $sig != 0 && $sign ne '-';
                return (0, 0);
            }
            $e = $e * 10 + $d;
        }
        $e10 = $sign eq '-' ? $e10 - $e : $e10 + $e;
        $e10 = $e10 < -2147483648 ? -2147483648 : $e10 > 2147483647 ? 2147483647 : $e10;
    }
    while (1) {
        if (abs $e10 <= 308) {
            if ($e10 >= 0) {
                $f *= $POW10[$e10];
                die "number out of range\n" unless finite($f);
            } else {
                $f /= $POW10[ -$e10 ];
            }
            last;
        }
        last if $f == 0;
        die "number out of range\n" if $e10 >= 0;
        $f /= $POW10[308];
        $e10 += 308;
    }
    return ($minus ? -$f : $f, 0);
}

# A JSON number's compact text: an integer as written, a float as its
# shortest round-trip digits.
sub json_number_text {
    my ($literal) = @_;
    my ($value, $integer) = json_number($literal);
    return $literal if $integer;
    return $literal =~ /^-/ ? '-0.0' : '0.0' if $value == 0;
    return float_text($value);
}

# A finite float's shortest round-trip digits, laid out as serde_json's
# formatter does: plain from 1e-5 to 1e16, else with an exponent.
sub float_text {
    my ($x) = @_;
    return sprintf('%g', $x) eq '-0' ? '-0.0' : '0.0' if $x == 0;
    my ($digits, $exp);
    for my $precision (0 .. 16) {
        my $s = sprintf('%.*e', $precision, abs $x);
        next unless number($s) == abs $x;
        my ($lead, $fraction, $e) = $s =~ /^([0-9])(?:\.([0-9]+))?e([-+][0-9]+)\z/;
        ($digits, $exp) = ($lead . ($fraction // ''), $e + 0);
        last;
    }
    $digits =~ s/0+\z//;
    my ($length, $point) = (length $digits, $exp + 1);
    my $text =
        $point >= $length && $point <= 16 ? $digits . ('0' x ($point - $length)) . '.0'
      : $point > 0 && $point <= 16        ? substr($digits, 0, $point) . '.' . substr($digits, $point)
      : $point > -5 && $point <= 0        ? '0.' . ('0' x -$point) . $digits
      :   substr($digits, 0, 1)
      . ($length > 1 ? '.' . substr($digits, 1) : '') . 'e'
      . ($point - 1 > 0 ? '+' : '')
      . ($point - 1);
    return ($x < 0 ? '-' : '') . $text;
}

# ---- bytes and text

my $UTF8_CHAR = qr/[\x00-\x7F]|[\xC2-\xDF][\x80-\xBF]|\xE0[\xA0-\xBF][\x80-\xBF]|[\xE1-\xEC\xEE\xEF][\x80-\xBF]{2}
  |\xED[\x80-\x9F][\x80-\xBF]|\xF0[\x90-\xBF][\x80-\xBF]{2}|[\xF1-\xF3][\x80-\xBF]{3}|\xF4[\x80-\x8F][\x80-\xBF]{2}/x;
# The longest start of a sequence that is not a whole one: one U+FFFD
# each, as Rust's from_utf8_lossy replaces it.
my $UTF8_PART = qr/[\xC2-\xDF]|\xE0[\xA0-\xBF]?|[\xE1-\xEC\xEE\xEF][\x80-\xBF]?|\xED[\x80-\x9F]?
  |\xF0(?:[\x90-\xBF][\x80-\xBF]?)?|[\xF1-\xF3](?:[\x80-\xBF][\x80-\xBF]?)?|\xF4(?:[\x80-\x8F][\x80-\xBF]?)?|[\x00-\xFF]/x;

# Bytes as text: undef where they are not UTF-8, or with U+FFFD for what is
# not when `lossy`.
sub decode_utf8 {
    my ($bytes, $lossy) = @_;
    return undef unless defined $bytes;
    no warnings 'regexp';
    my $text = '';
    pos($bytes) = 0;
    while (pos($bytes) < length $bytes) {
        if ($bytes =~ /\G((?:$UTF8_CHAR)+)/gc) {
            my $run = $1;
            utf8::decode($run);
            $text .= $run;
        } else {
            return undef unless $lossy;
            $bytes =~ /\G$UTF8_PART/gc;
            $text .= "\x{FFFD}";
        }
    }
    return $text;
}

sub slurp {
    my ($path) = @_;
    open(my $fh, '<', $path) or die "$path: $!\n";
    binmode $fh;
    local $/;
    return <$fh> // '';
}

sub write_file {
    my ($path, $text) = @_;
    open(my $fh, '>', $path) or die "$path: $!\n";
    print $fh $text;
    close $fh or die "$path: $!\n";
}

main(@ARGV);
