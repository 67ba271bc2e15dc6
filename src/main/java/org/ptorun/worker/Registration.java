package org.ptorun.worker;

import java.util.concurrent.CompletableFuture;
import org.ptorun.callable.ChipCallable;

/** A registration queued on one chip's lane, applied when the lane holds no run. */
record Registration(int id, ChipCallable callable, CompletableFuture<Void> done) {
}
