//! The JNI membrane: the only module that uses the `jni` crate. Each exported
//! function converts its arguments, delegates to the core, and converts the
//! result; every error and panic becomes a Java exception ([`errors`]), never
//! a crash. Native threads never call into the JVM: Java pulls changes,
//! snapshots and log records with blocking calls that have a timeout.
//!
//! The Java side is `org.sparkk8snative.NativeBridge`.

mod errors;
mod handles;
pub mod logs;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jni::objects::{JClass, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong};
use jni::{Env, EnvUnowned};

use crate::driver::ExecutorTracking;
use crate::runtime::RuntimeLease;
use crate::services::{Ensured, ServiceController, ServiceWork};
use crate::settings::Settings;
use crate::wire;
use errors::{JniError, ThrowJavaException};
use handles::{InformerHandle, ServicesHandle};

/// `NativeLibrary.version()`: the library's version string.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeLibrary_version<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
) -> JString<'local> {
    env.with_env(|env| -> Result<_, JniError> { Ok(env.new_string(crate::version())?) }).resolve::<ThrowJavaException>()
}

/// `long create(String[] confKeyValues, String applicationId)`: an informer
/// for the app's executor pods, from SparkConf entries as key, value, key, ...
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_create<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    conf: JObjectArray<'local, JString<'local>>,
    app_id: JString<'local>,
) -> jlong {
    env.with_env(|env| -> Result<_, JniError> {
        let (settings, app_id, runtime) = prepare(env, &conf, &app_id)?;
        let tracking = runtime.block_on(ExecutorTracking::connect(&settings, &app_id))?;
        let handle = InformerHandle { informer: tracking.informer, services: tracking.services, runtime };
        Ok(handles::INFORMERS.register(handle))
    })
    .resolve::<ThrowJavaException>()
}

/// `void start(long handle)`: returns at once; a second start throws.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_start<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    env.with_env(|_| -> Result<_, JniError> {
        let handle = handles::INFORMERS.get(handle)?;
        let _entered = handle.runtime.handle().enter();
        Ok(handle.informer.start()?)
    })
    .resolve::<ThrowJavaException>()
}

/// `void stop(long handle)`: idempotent, bounded.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_stop<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    env.with_env(|_| -> Result<_, JniError> {
        let handle = handles::INFORMERS.get(handle)?;
        handle.runtime.block_on(handle.informer.stop());
        Ok(())
    })
    .resolve::<ThrowJavaException>()
}

/// `void close(long handle)`: stops and releases; any later call with this
/// handle throws `IllegalStateException`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_close<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    env.with_env(|_| -> Result<_, JniError> {
        let handle = handles::INFORMERS.remove(handle)?;
        handle.runtime.block_on(handle.informer.stop());
        Ok(())
    })
    .resolve::<ThrowJavaException>()
}

/// `byte[] pollChanges(long handle, int maxBatch, long timeoutMillis)`: a
/// CHANGES frame (see `wire.rs`), empty after the timeout, or, once the
/// informer is stopped, a NOT_READY frame saying so (the lister's shape of "no").
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_pollChanges<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    max_batch: jint,
    timeout_millis: jlong,
) -> jni::objects::JByteArray<'local> {
    env.with_env(|env| -> Result<_, JniError> {
        let max_batch = positive(max_batch as i64, "maxBatch")?;
        let timeout = Duration::from_millis(non_negative(timeout_millis, "timeoutMillis")?);
        let handle = handles::INFORMERS.get(handle)?;
        match handle.informer.take_changes(max_batch as usize, timeout) {
            Ok(changes) => Ok(env.byte_array_from_slice(&wire::encode_changes(&changes))?),
            Err(stopped) => Ok(env.byte_array_from_slice(&wire::encode_not_ready(&stopped.to_string()))?),
        }
    })
    .resolve::<ThrowJavaException>()
}

/// `byte[] listerSnapshot(long handle, long knownView, long waitMillis)`: a
/// SNAPSHOT, UNCHANGED or NOT_READY frame (see `wire.rs`), once the lister is
/// ready or after `waitMillis`; `knownView` is the view of the caller's
/// previous snapshot (0: none).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_listerSnapshot<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    known_view: jlong,
    wait_millis: jlong,
) -> jni::objects::JByteArray<'local> {
    env.with_env(|env| -> Result<_, JniError> {
        let known = non_negative(known_view, "knownView")?;
        let wait = Duration::from_millis(non_negative(wait_millis, "waitMillis")?);
        let handle = handles::INFORMERS.get(handle)?;
        let bytes = match handle.informer.lister_snapshot_within(wait) {
            Ok(snapshot) => wire::encode_snapshot(&snapshot.pods, known, snapshot.view),
            Err(not_ready) => wire::encode_not_ready(&not_ready.to_string()),
        };
        Ok(env.byte_array_from_slice(&bytes)?)
    })
    .resolve::<ThrowJavaException>()
}

/// `boolean changesTakenAfter(long handle, long view)`: whether `pollChanges` has handed out a
/// change newer than the lister snapshot of `view`, which Spark must then not be given.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_changesTakenAfter<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    view: jlong,
) -> jboolean {
    env.with_env(|_| -> Result<_, JniError> {
        let view = non_negative(view, "view")?;
        Ok(handles::INFORMERS.get(handle)?.informer.changes_taken_after(view))
    })
    .resolve::<ThrowJavaException>()
}

/// `byte[] health(long handle)`: a HEALTH frame (see `wire.rs`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_health<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> jni::objects::JByteArray<'local> {
    env.with_env(|env| -> Result<_, JniError> {
        let health = handles::INFORMERS.get(handle)?.informer.health();
        Ok(env.byte_array_from_slice(&wire::encode_health(&health))?)
    })
    .resolve::<ThrowJavaException>()
}

/// `int wireVersion()`: the version of the frames this library sends; the jar
/// refuses a library that speaks another.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeLibrary_wireVersion<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
) -> jint {
    env.with_env(|_| -> Result<_, JniError> { Ok(wire::VERSION as jint) }).resolve::<ThrowJavaException>()
}

/// `long nativeAllocatedBytes()`: bytes the library holds on its heap now.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeLibrary_nativeAllocatedBytes<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
) -> jlong {
    env.with_env(|_| -> Result<_, JniError> { Ok(crate::memory::allocated_bytes() as jlong) })
        .resolve::<ThrowJavaException>()
}

/// `String[] pollLogs(int max, long timeoutMillis)`: log records as level,
/// target, message triples; empty after the timeout.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_pollLogs<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    max: jint,
    timeout_millis: jlong,
) -> JObjectArray<'local, JString<'local>> {
    env.with_env(|env| -> Result<_, JniError> {
        let max = positive(max as i64, "max")?;
        let timeout = Duration::from_millis(non_negative(timeout_millis, "timeoutMillis")?);
        logs::install();
        let records = logs::take(max as usize, timeout);
        let array =
            env.new_object_array(records.len() as i32 * 3, jni::jni_str!("java/lang/String"), JString::null())?;
        let array = JObjectArray::<JString>::cast_local(env, array)?;
        for (i, record) in records.iter().enumerate() {
            for (j, value) in
                [record.level.to_string(), record.target.clone(), record.message.clone()].iter().enumerate()
            {
                let value = env.new_string(value)?;
                array.set_element(env, i * 3 + j, &value)?;
                env.delete_local_ref(value);
            }
        }
        Ok(array)
    })
    .resolve::<ThrowJavaException>()
}

/// `void setLogLevel(int level)`: 0 OFF, 1 ERROR, 2 WARN, 3 INFO, 4 DEBUG, 5 TRACE.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_setLogLevel<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    level: jint,
) {
    env.with_env(|_| -> Result<_, JniError> {
        if !(0..=5).contains(&level) {
            return Err(JniError::InvalidArgument(format!("level={level}: must be 0 (OFF) to 5 (TRACE)")));
        }
        logs::install();
        logs::set_max_level(level as u8);
        Ok(())
    })
    .resolve::<ThrowJavaException>()
}

/// `String executorServiceName(String applicationId, String executorId)`: the
/// name of an executor's Service, from the one function that makes it.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_executorServiceName<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    app_id: JString<'local>,
    exec_id: JString<'local>,
) -> JString<'local> {
    env.with_env(|env| -> Result<_, JniError> {
        let app_id = required_string(env, &app_id, "applicationId")?;
        let exec_id = required_string(env, &exec_id, "executorId")?;
        if app_id.trim().is_empty() || exec_id.trim().is_empty() {
            return Err(JniError::InvalidArgument(format!(
                "applicationId={app_id:?}, executorId={exec_id:?}: both are required"
            )));
        }
        Ok(env.new_string(crate::services::service_name(&app_id, &exec_id))?)
    })
    .resolve::<ThrowJavaException>()
}

/// `String sparkPodState(String[] confKeyValues, String podJson)`: the name of
/// the class Spark gives this pod state (`PodFailed`, ...), by the rules the
/// informer keeps states by, so that the JVM can hold them against Spark's own
/// `ExecutorPodsSnapshot`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_sparkPodState<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    conf: JObjectArray<'local, JString<'local>>,
    pod_json: JString<'local>,
) -> JString<'local> {
    env.with_env(|env| -> Result<_, JniError> {
        let rules = crate::settings::spark_state_rules_from_spark_conf(&string_map(env, &conf)?)?;
        let pod_json = required_string(env, &pod_json, "podJson")?;
        let pod = serde_json::from_str(&pod_json)
            .map_err(|e| JniError::InvalidArgument(format!("podJson is not a pod: {e}")))?;
        Ok(env.new_string(crate::pod::spark_state(&pod, &rules).spark_class_name())?)
    })
    .resolve::<ThrowJavaException>()
}

/// `void checkSettings(String[] confKeyValues)`: parses the SparkConf entries as
/// `create` does, so the JVM can fail driver start-up early with the same error
/// naming the key, without a second validation of its own.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_checkSettings<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    conf: JObjectArray<'local, JString<'local>>,
) {
    env.with_env(|env| -> Result<_, JniError> {
        let conf = string_map(env, &conf)?;
        Settings::from_spark_conf(&conf)?;
        Ok(())
    })
    .resolve::<ThrowJavaException>()
}

/// `long createServices(String[] confKeyValues, String applicationId)`: the
/// app's executor Services without an informer (Spark's own sources track the
/// pods): a Service controller of its own, fed only through this handle. Needs
/// `spark.kubernetes.executor.enableService=true` and its keys; fails when the
/// apiserver says the driver may not get, create and delete services.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_createServices<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    conf: JObjectArray<'local, JString<'local>>,
    app_id: JString<'local>,
) -> jlong {
    env.with_env(|env| -> Result<_, JniError> {
        let (settings, app_id, runtime) = prepare(env, &conf, &app_id)?;
        let controller = runtime.block_on(ServiceController::connect(&settings, &app_id))?;
        let handle = ServicesHandle { controller: Arc::new(controller), owns_controller: true, runtime };
        Ok(handles::SERVICES.register(handle))
    })
    .resolve::<ThrowJavaException>()
}

/// `long informerServices(long informerHandle)`: a services handle sharing the
/// Service controller of an informer created with Services on, so that the
/// Java side ensures through the one controller the informer feeds.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_informerServices<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    informer_handle: jlong,
) -> jlong {
    env.with_env(|_| -> Result<_, JniError> {
        let informer = handles::INFORMERS.get(informer_handle)?;
        let controller = informer.services.clone().ok_or_else(|| {
            JniError::IllegalState(format!(
                "spark-k8s-native informer handle {informer_handle} has executor Services off \
                 ({}=false when it was created): it has no Service controller to share",
                crate::settings::keys::ENABLE_SERVICE.name
            ))
        })?;
        let runtime = RuntimeLease::acquire()
            .map_err(|e| JniError::IllegalState(format!("cannot start the native runtime: {e}")))?;
        Ok(handles::SERVICES.register(ServicesHandle { controller, owns_controller: false, runtime }))
    })
    .resolve::<ThrowJavaException>()
}

/// `int ensureServices(long handle, String[] executorIds)`: ensures the
/// Service of each executor now (concurrently, within the request bound),
/// through the app's Service controller; returns how many were created or
/// repaired (one another tool made is left alone and not counted). The first
/// failure is thrown, with its HTTP status, after every id was tried.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_ensureServices<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    exec_ids: JObjectArray<'local, JString<'local>>,
) -> jint {
    env.with_env(|env| -> Result<_, JniError> {
        let ids = string_array(env, &exec_ids, "executorIds")?;
        let handle = handles::SERVICES.get(handle)?;
        let controller = &handle.controller;
        let outcomes =
            handle.runtime.block_on(futures::future::join_all(ids.iter().map(|id| controller.ensure_now(id))));
        let mut changed = 0;
        for outcome in outcomes {
            match outcome? {
                Ensured::Created | Ensured::Repaired => changed += 1,
                Ensured::Unchanged | Ensured::Foreign => {}
            }
        }
        Ok(changed)
    })
    .resolve::<ThrowJavaException>()
}

/// `void servicesGone(long handle, String[] executorIds)`: these executors'
/// pods are gone; their Services are deleted
/// `spark.kubernetes.native.service.deleteAfter` later. With the informer off
/// the Java side reports them (from Spark's snapshots), so the cleanup works
/// in both modes. Returns at once.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_servicesGone<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    exec_ids: JObjectArray<'local, JString<'local>>,
) {
    env.with_env(|env| -> Result<_, JniError> {
        let ids = string_array(env, &exec_ids, "executorIds")?;
        let handle = handles::SERVICES.get(handle)?;
        for id in ids {
            handle.controller.send(ServiceWork::Gone(id));
        }
        Ok(())
    })
    .resolve::<ThrowJavaException>()
}

/// `void closeServices(long handle)`: stops the handle's own controller; one
/// shared with an informer keeps running until that informer stops.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_closeServices<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    env.with_env(|_| -> Result<_, JniError> {
        let handle = handles::SERVICES.remove(handle)?;
        if handle.owns_controller {
            handle.controller.stop();
        }
        Ok(())
    })
    .resolve::<ThrowJavaException>()
}

/// `int openHandles()`: informers and Services handles created and not closed.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeBridge_openHandles<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
) -> jint {
    env.with_env(|_| -> Result<_, JniError> {
        Ok((handles::INFORMERS.open_count() + handles::SERVICES.open_count()) as jint)
    })
    .resolve::<ThrowJavaException>()
}

/// What every constructor needs: Spark's settings and the app id from Java,
/// validated, the log bridge, and a share of the runtime.
fn prepare(
    env: &mut Env<'_>,
    conf: &JObjectArray<'_, JString<'_>>,
    app_id: &JString<'_>,
) -> Result<(Settings, String, RuntimeLease), JniError> {
    let conf = string_map(env, conf)?;
    let app_id = required_string(env, app_id, "applicationId")?;
    logs::install();
    let settings = Settings::from_spark_conf(&conf)?;
    settings.warn_unknown_keys();
    // The app id is validated once, by the core's connect of what the handle is for
    // (ExecutorTracking's for an informer, ServiceController's for Services alone), not here.
    let runtime =
        RuntimeLease::acquire().map_err(|e| JniError::IllegalState(format!("cannot start the native runtime: {e}")))?;
    Ok((settings, app_id, runtime))
}

/// A `String[]` with no null element.
fn string_array(env: &mut Env<'_>, array: &JObjectArray<'_, JString<'_>>, name: &str) -> Result<Vec<String>, JniError> {
    if array.is_null() {
        return Err(JniError::InvalidArgument(format!("{name} is null")));
    }
    let mut values = Vec::new();
    for i in 0..array.len(env)? {
        let value = array.get_element(env, i)?;
        values.push(required_string(env, &value, &format!("{name}[{i}]"))?);
    }
    Ok(values)
}

fn required_string(env: &mut Env<'_>, value: &JString<'_>, name: &str) -> Result<String, JniError> {
    if value.is_null() {
        return Err(JniError::InvalidArgument(format!("{name} is null")));
    }
    value.try_to_string(env).map_err(|e| JniError::InvalidArgument(format!("{name} is not valid text: {e}")))
}

/// `key, value, key, value, ...` -> map; every null or odd entry is an error naming it.
fn string_map(env: &mut Env<'_>, array: &JObjectArray<'_, JString<'_>>) -> Result<HashMap<String, String>, JniError> {
    if array.is_null() {
        return Err(JniError::InvalidArgument("the configuration array is null".into()));
    }
    let len = array.len(env)?;
    if len % 2 != 0 {
        return Err(JniError::InvalidArgument(format!(
            "the configuration array has an odd length ({len}): key, value pairs expected"
        )));
    }
    let mut map = HashMap::with_capacity(len / 2);
    for i in (0..len).step_by(2) {
        let key = array.get_element(env, i)?;
        let key = required_string(env, &key, &format!("configuration key #{}", i / 2))?;
        let value = array.get_element(env, i + 1)?;
        let value = required_string(env, &value, &format!("the value of {key}"))?;
        map.insert(key, value);
    }
    Ok(map)
}

fn positive(value: i64, name: &str) -> Result<u64, JniError> {
    if value <= 0 {
        return Err(JniError::InvalidArgument(format!("{name}={value}: must be greater than zero")));
    }
    Ok(value as u64)
}

fn non_negative(value: i64, name: &str) -> Result<u64, JniError> {
    if value < 0 {
        return Err(JniError::InvalidArgument(format!("{name}={value}: must not be negative")));
    }
    Ok(value as u64)
}
