package gregor.compat;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.KafkaFuture;

/** Waiting on AdminClient futures, for the admin checks. */
final class AdminCalls {
    private AdminCalls() {}

    /** The future's value, waiting at most Clients.TIMEOUT. */
    static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    }

    /** Waits for f and fails unless it fails with a cause of class want. */
    static void expectFailure(KafkaFuture<?> f, Class<? extends Throwable> want, String what) throws Exception {
        try {
            get(f);
        } catch (ExecutionException e) {
            Expect.that(want.isInstance(e.getCause()),
                    what + " failed with " + e.getCause() + ", want " + want.getSimpleName());
            return;
        }
        throw new AssertionError(what + " succeeded, want " + want.getSimpleName());
    }
}
