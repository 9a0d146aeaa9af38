package org.sparkk8snative.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshot;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * Java and Scala collections, the same way on Scala 2.12 (Spark 3.5) and 2.13 (Spark 4.x): Spark's
 * {@code Seq} is {@code scala.collection.Seq} in one and {@code scala.collection.immutable.Seq} in
 * the other, and each Scala has its own converters ({@code JavaConverters} is deprecated in 2.13,
 * {@code scala.jdk.javaapi} missing in 2.12). An immutable {@code List} is a {@code Seq} of both,
 * and {@code Iterable.iterator()} is in both.
 */
final class ScalaCollections {
  private ScalaCollections() {}

  /** A Scala immutable list of the same elements in the same order. */
  @SuppressWarnings("unchecked")
  static <T> scala.collection.immutable.List<T> toScalaList(List<T> elements) {
    scala.collection.immutable.List<T> list =
        (scala.collection.immutable.List<T>) (Object) scala.collection.immutable.Nil$.MODULE$;
    for (int i = elements.size() - 1; i >= 0; i--) {
      list = list.$colon$colon(elements.get(i));
    }
    return list;
  }

  /** The elements of a Scala collection, as a new Java list. */
  static <T> List<T> toJava(scala.collection.Iterable<T> elements) {
    List<T> list = new ArrayList<>();
    scala.collection.Iterator<T> it = elements.iterator();
    while (it.hasNext()) {
      list.add(it.next());
    }
    return list;
  }

  /**
   * Subscribes to Spark's snapshot store: {@code addSubscriber(interval)(Seq[ExecutorPodsSnapshot]
   * => Unit)}, whose {@code Seq} is another type on each Scala, hence the raw function here.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static void subscribe(
      ExecutorPodsSnapshotsStore store,
      long batchIntervalMillis,
      Consumer<List<ExecutorPodsSnapshot>> onSnapshots) {
    scala.Function1 subscriber =
        new AbstractFunction1<Object, BoxedUnit>() {
          @Override
          public BoxedUnit apply(Object snapshots) {
            onSnapshots.accept(toJava((scala.collection.Iterable<ExecutorPodsSnapshot>) snapshots));
            return BoxedUnit.UNIT;
          }
        };
    store.addSubscriber(batchIntervalMillis, subscriber);
  }
}
