package org.sparkk8snative.spark;

import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.NativeInformer;

/**
 * The one native informer behind the informer source and the lister source: created and started
 * by the first source to start, closed when the last one stops.
 */
final class SharedNativeInformer {
  private static final Logger LOG = LoggerFactory.getLogger(SharedNativeInformer.class);

  private final Map<String, String> sparkConf;
  private NativeInformer informer;
  private int users;

  SharedNativeInformer(Map<String, String> sparkConf) {
    this.sparkConf = sparkConf;
  }

  synchronized NativeInformer acquire(String applicationId) {
    if (informer == null) {
      NativeInformer created = NativeInformer.create(sparkConf, applicationId);
      try {
        created.start();
      } catch (RuntimeException e) {
        created.close();
        throw e;
      }
      informer = created;
    } else if (!informer.applicationId().equals(applicationId)) {
      throw new IllegalStateException("the native informer runs for application " + informer.applicationId()
          + ", not " + applicationId);
    } else {
      // The second source of the pair: expected on every start (review comment 8), so debug.
      LOG.debug("Native informer already running for {}", applicationId);
    }
    users++;
    return informer;
  }

  synchronized void release() {
    if (users > 0 && --users == 0) {
      informer.close();
      informer = null;
    }
  }

  /** The running informer, or null. */
  synchronized NativeInformer current() {
    return informer;
  }
}
