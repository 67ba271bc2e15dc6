#include "gloo/gloo_error.h"

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include <exception>
#include <new>

namespace ptogloo {

namespace {
thread_local std::string t_last_error;

bool contains(const std::string &s, const char *needle) { return s.find(needle) != std::string::npos; }

/* Gloo reports a timeout as an IoException (or an enforce) whose message says so. */
bool says_timeout(const std::string &what) {
  return contains(what, "Timed out") || contains(what, "timed out") || contains(what, "Timeout") ||
         contains(what, "timeout");
}
}  // namespace

int fail(int code, const std::string &msg) {
  try {
    t_last_error = msg;
  } catch (...) {
    /* no memory for the message: keep the code */
  }
  return code;
}

int fail_current(const char *op, PeerHint peer_hint, const void *ctx) {
  std::string prefix = std::string(op) + ": ";
  try {
    throw;
  } catch (const Error &e) {
    return fail(e.code(), prefix + e.what());
  } catch (const std::bad_alloc &) {
    return fail(PTO_ERR_OUT_OF_MEMORY, prefix + "out of memory");
  } catch (const gloo::IoException &e) {
    std::string what = e.what();
    std::string peer = peer_hint ? peer_hint(ctx, what) : std::string("a peer");
    if (says_timeout(what))
      return fail(PTO_ERR_TIMEOUT, prefix + "timed out waiting for " + peer + " (" + what + ")");
    return fail(PTO_ERR_DEVICE, prefix + "lost " + peer + " (" + what + ")");
  } catch (const gloo::EnforceNotMet &e) {
    std::string what = e.what();
    if (says_timeout(what)) return fail(PTO_ERR_TIMEOUT, prefix + what);
    return fail(PTO_ERR_FAILED, prefix + what);
  } catch (const gloo::Exception &e) {
    return fail(PTO_ERR_FAILED, prefix + e.what());
  } catch (const std::exception &e) {
    return fail(PTO_ERR_FAILED, prefix + e.what());
  } catch (...) {
    return fail(PTO_ERR_FAILED, prefix + "unknown exception");
  }
}

const char *last_error() { return t_last_error.c_str(); }

}  // namespace ptogloo
