/*
 * The plugin's errors: a C++ exception carrying a PTO_ERR_* code, the
 * calling thread's last message (ptorun_gloo_last_error) and the translation
 * of whatever was thrown (ours, Gloo's, the standard library's) into a code at
 * the C boundary. Internal to libptorun_gloo.so.
 */
#ifndef PTORUN_GLOO_ERROR_H
#define PTORUN_GLOO_ERROR_H

#include <stdexcept>
#include <string>

/* pto_runtime_c_api.h is C11: its layout asserts use C11 keywords, spelled
 * here in C++ so the codes come from the one contract header. */
#define _Static_assert static_assert
#define _Alignof alignof
#include "ptorun/pto_runtime_c_api.h"
#undef _Alignof
#undef _Static_assert

namespace ptogloo {

/* A failure with its code, thrown inside the plugin. */
class Error : public std::runtime_error {
 public:
  Error(int code, const std::string &msg) : std::runtime_error(msg), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

/* Records msg as the thread's last error and returns code. */
int fail(int code, const std::string &msg);

/* Called inside a catch (...) block: classifies the exception in flight,
 * records "<op>: <message>" (peer_hint rewrites Gloo's message naming the
 * peer, may be null) and returns its code. */
using PeerHint = std::string (*)(const void *ctx, const std::string &what);
int fail_current(const char *op, PeerHint peer_hint, const void *ctx);

const char *last_error();

}  // namespace ptogloo

#endif
