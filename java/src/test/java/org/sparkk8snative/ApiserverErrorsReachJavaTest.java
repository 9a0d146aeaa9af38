package org.sparkk8snative;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** What the apiserver answers reaches Java as it said it: HTTP status and reason. */
class ApiserverErrorsReachJavaTest {

  @Test
  void withoutRightsOnServicesTheServicesAreRefusedAtCreationNamingTheFix() {
    TestPlane plane = TestPlane.get();
    String app = TestPlane.uniqueAppId("forbidden");
    String driver = plane.createDriver(app).getMetadata().getName();
    Map<String, String> conf = plane.sparkConf(false);
    // An identity with rights on pods only: the start-up check of the rights on Services refuses
    // before any executor is built, naming what is missing and how to fix it.
    conf.put(
        "spark.kubernetes.authenticate.oauthTokenFile",
        plane.var("LOCALPLANE_PODS_ONLY_TOKEN_FILE"));
    conf.put(ConfigKeys.ENABLE_SERVICE, "true");
    conf.put(ConfigKeys.BLOCK_MANAGER_PORT, "7079");
    conf.put(ConfigKeys.DRIVER_POD_NAME, driver);
    try {
      SparkK8sNativeException e =
          assertThrows(
              SparkK8sNativeException.class, () -> NativeExecutorServices.create(conf, app));
      assertEquals(403, e.httpStatus(), e.getMessage());
      assertEquals("Forbidden", e.reason(), e.getMessage());
      assertTrue(e.getMessage().contains("get, create and delete"), e.getMessage());
      assertTrue(e.getMessage().contains(ConfigKeys.ENABLE_SERVICE + "=false"), e.getMessage());
    } finally {
      plane.admin().pods().withName(driver).delete();
    }
  }

  @Test
  void aBadSettingIsAnIllegalArgumentNamingTheKey() {
    Map<String, String> conf = TestPlane.get().sparkConf(false);
    conf.put(ConfigKeys.ENABLE_SERVICE, "true");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> NativeSettings.check(conf));
    assertTrue(e.getMessage().startsWith(ConfigKeys.BLOCK_MANAGER_PORT), e.getMessage());
  }
}
