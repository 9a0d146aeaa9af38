//! The JNI membrane: the only module that uses the `jni` crate. Each exported
//! function converts its arguments, delegates to the core, and converts the
//! result; every error and panic becomes a Java exception, never a crash.

use jni::errors::ThrowRuntimeExAndDefault;
use jni::objects::{JClass, JString};
use jni::EnvUnowned;

/// `org.sparkk8snative.NativeLibrary.version()`: the library's version string.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_sparkk8snative_NativeLibrary_version<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
) -> JString<'local> {
    env.with_env(|env| env.new_string(crate::version())).resolve::<ThrowRuntimeExAndDefault>()
}
