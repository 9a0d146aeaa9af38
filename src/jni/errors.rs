//! Every failure of an exported function, and the Java exception it becomes:
//! the one place that maps Rust errors to Java classes.

use std::any::Any;

use jni::errors::ErrorPolicy;
use jni::objects::JValue;
use jni::strings::JNIString;
use jni::{jni_sig, jni_str, Env};

use crate::client::SetupError;
use crate::informer::InformerError;
use crate::services::ServiceError;
use crate::settings::SettingsError;

/// The project's exception: carries an HTTP status (0: none) and a reason.
const NATIVE_EXCEPTION: &str = "org/sparkk8snative/SparkK8sNativeException";

#[derive(Debug, thiserror::Error)]
pub(super) enum JniError {
    /// A bad argument or setting: `IllegalArgumentException`, naming it.
    #[error("{0}")]
    InvalidArgument(String),
    /// Misuse (closed handle, second start): `IllegalStateException`.
    #[error("{0}")]
    IllegalState(String),
    /// The client or the apiserver failed: `SparkK8sNativeException` with the
    /// HTTP status and the apiserver's reason (`Forbidden`, `NotFound`, ...).
    #[error("{message}")]
    Kubernetes { message: String, status: u16, reason: String },
    /// A bug of ours (a Rust panic, an impossible state): `SparkK8sNativeException`
    /// with reason `InternalError`, so it is never mistaken for a bad input.
    #[error("spark-k8s-native internal error: {0}")]
    Internal(String),
    /// A JNI call failed; a Java exception is usually pending already.
    #[error("JNI: {0}")]
    Jni(#[from] jni::errors::Error),
}

impl From<SettingsError> for JniError {
    fn from(e: SettingsError) -> Self {
        JniError::InvalidArgument(e.to_string())
    }
}

impl From<SetupError> for JniError {
    fn from(e: SetupError) -> Self {
        match e {
            SetupError::Settings(e) => e.into(),
            SetupError::Client(e) => {
                JniError::Kubernetes { message: e.to_string(), status: 0, reason: "ClientConfiguration".into() }
            }
            // The apiserver's answer to the access reviews: the requests would be refused with 403.
            SetupError::Access(e) => {
                JniError::Kubernetes { message: e.to_string(), status: 403, reason: "Forbidden".into() }
            }
        }
    }
}

impl From<InformerError> for JniError {
    fn from(e: InformerError) -> Self {
        JniError::IllegalState(e.to_string())
    }
}

impl From<ServiceError> for JniError {
    fn from(e: ServiceError) -> Self {
        if let ServiceError::Stopped { .. } = e {
            return JniError::IllegalState(format!("{e} (their informer was stopped or closed)"));
        }
        let (status, reason) = match e.api_status() {
            // The apiserver's own reason (Forbidden, AlreadyExists, TooManyRequests, ...).
            Some(s) if !s.reason.is_empty() => (s.code, s.reason.clone()),
            Some(s) => (s.code, "ApiserverError".to_string()),
            None => (0, "Unreachable".to_string()),
        };
        JniError::Kubernetes { message: e.to_string(), status, reason }
    }
}

/// Throws the Java exception for each error and panic, returning the default value.
pub(super) struct ThrowJavaException;

impl<T: Default> ErrorPolicy<T, JniError> for ThrowJavaException {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _: &mut (),
        error: JniError,
    ) -> jni::errors::Result<T> {
        if !env.exception_check() {
            throw(env, error);
        }
        Ok(T::default())
    }

    fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _: &mut (),
        payload: Box<dyn Any + Send + 'static>,
    ) -> jni::errors::Result<T> {
        let message = panic_message(&*payload);
        tracing::error!("internal error (Rust panic): {message}");
        if !env.exception_check() {
            throw(env, JniError::Internal(format!("Rust panic: {message}")));
        }
        Ok(T::default())
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic with a non-string payload".into())
}

fn throw(env: &mut Env<'_>, error: JniError) {
    let _ = match error {
        JniError::InvalidArgument(m) => {
            env.throw_new(jni_str!("java/lang/IllegalArgumentException"), JNIString::new(m))
        }
        JniError::IllegalState(m) => env.throw_new(jni_str!("java/lang/IllegalStateException"), JNIString::new(m)),
        JniError::Kubernetes { message, status, reason } => throw_native(env, &message, status, &reason),
        JniError::Internal(m) => {
            throw_native(env, &format!("spark-k8s-native internal error: {m}"), 0, "InternalError")
        }
        JniError::Jni(e) => {
            env.throw_new(jni_str!("java/lang/IllegalStateException"), JNIString::new(format!("JNI: {e}")))
        }
    };
}

fn throw_native(env: &mut Env<'_>, message: &str, status: u16, reason: &str) -> jni::errors::Result<()> {
    let message = env.new_string(message)?;
    let reason = env.new_string(reason)?;
    let exception = env.new_object(
        JNIString::new(NATIVE_EXCEPTION),
        jni_sig!("(Ljava/lang/String;ILjava/lang/String;)V"),
        &[JValue::Object(&message), JValue::Int(status as i32), JValue::Object(&reason)],
    )?;
    let exception = env.cast_local::<jni::objects::JThrowable>(exception)?;
    env.throw(exception)
}
