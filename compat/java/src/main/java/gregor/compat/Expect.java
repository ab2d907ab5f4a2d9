package gregor.compat;

import java.time.Duration;
import java.util.Objects;
import java.util.function.BooleanSupplier;

/** Assertions for the checks: a failed one throws AssertionError with the message. */
final class Expect {
    private Expect() {}

    static void that(boolean cond, String message) {
        if (!cond) {
            throw new AssertionError(message);
        }
    }

    static void equal(Object got, Object want, String what) {
        if (!Objects.equals(got, want)) {
            throw new AssertionError(what + ": got " + got + ", want " + want);
        }
    }

    /** Re-evaluates cond every 50 ms until it holds; fails after d. */
    static void eventually(Duration d, String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + d.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + d.toSeconds() + "s waiting for " + what);
            }
            Thread.sleep(50);
        }
    }
}
