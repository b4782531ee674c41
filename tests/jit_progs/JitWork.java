// profil run --jit on a JVM (issue 34, tests/run_jit_java.sh): two hot
// methods the JIT compiles, heavy doing three times light's work, for about
// CPU_SECONDS (the first argument, default 2) of the main thread's CPU, so
// that the run is as long on a busy machine as on an idle one. Prints a
// checksum, which the test compares with a run outside profil.
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class JitWork {
  static int heavy(int s, int n) {
    for (int i = 0; i < 3 * n; i++) s = s * 31 + (i ^ (s >>> 7));
    return s;
  }

  static int light(int s, int n) {
    for (int i = 0; i < n; i++) s = s * 17 + (i ^ (s >>> 5));
    return s;
  }

  public static void main(String[] args) {
    final double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 2.0;
    final ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
    final long start = cpu.getCurrentThreadCpuTime();
    // Long calls, few of them: main's loop runs too few times to be
    // compiled (C2 would inline both methods into it, and the samples
    // would be main's); heavy and light are compiled themselves (on stack
    // replacement, then whole).
    int s = 1;
    while (cpu.getCurrentThreadCpuTime() - start < (long) (seconds * 1e9)) s = light(heavy(s, 10_000_000), 10_000_000);
    // The checksum of a fixed amount of work, whatever the rounds were.
    final int check = light(heavy(1, 1_000_000), 1_000_000);
    System.out.println("checksum " + check + (s == 42 ? " " : ""));
  }
}
