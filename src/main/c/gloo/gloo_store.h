/*
 * The group's rendezvous: a TCP key-value store served by rank 0 for the
 * group's life (StoreServer) and the gloo::rendezvous::Store every rank
 * (rank 0 too) uses through it (StoreClient).
 *
 * Wire: every message is a frame, a 4-byte little-endian length and that many
 * bytes. A request is an op byte ('S' set, 'G' get, 'W' wait), the 32-char
 * group id, then: S a key and a value, G a key, W a key count and the keys
 * (each key/value a 4-byte length and its bytes). A reply is a status byte
 * (kOk, kMissing, kOtherGroup, kBadRequest), then for G the value. The server
 * keeps keys prefixed by its group id and refuses a request of another group.
 * A W is answered when every key is set (the server parks it; the client
 * bounds it with its own deadline and drops the connection when it expires).
 *
 * The health lane: after the open every rank keeps its connection and says
 * 'H' with its rank; 'B' (at close) says it leaves. A connection of a rank
 * that closes without 'B' — its process died — makes that rank lost ('B' has
 * no answer: the client closes right after it). 'L' answers the lost ranks (a count and each rank, u32), parked until there is
 * one: a rank whose collective failed asks, so that it names the rank that
 * died rather than a survivor that closed meanwhile. An 'L' may carry a count
 * and ranks: then it answers only lost ranks among those, parked until one of
 * them is lost (a subgroup asks about its members: a rank lost outside it did
 * not break it).
 */
#ifndef PTORUN_GLOO_STORE_H
#define PTORUN_GLOO_STORE_H

#include <gloo/rendezvous/store.h>
#include <netinet/in.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ptogloo {

/* "a.b.c.d:port" -> sockaddr; throws Error(PTO_ERR_INVALID_ARGUMENT). */
struct sockaddr_in parse_endpoint(const std::string &text);
/* "a.b.c.d" -> in_addr; throws Error(PTO_ERR_INVALID_ARGUMENT). */
struct in_addr parse_ipv4(const std::string &text);

class StoreServer {
 public:
  /* Binds and listens at `at` (SO_REUSEADDR) and starts the serving thread;
   * throws Error (PTO_ERR_FAILED naming the address when it cannot bind). */
  StoreServer(const struct sockaddr_in &at, const std::string &group_id);
  /* Stops the thread and closes every connection. */
  ~StoreServer();
  StoreServer(const StoreServer &) = delete;
  StoreServer &operator=(const StoreServer &) = delete;

  /* Waits at most `max` until every rank's health lane closed (each said
   * goodbye or died): rank 0 closes its group so, letting the others still ask
   * who was lost after a failure. */
  void await_lanes_closed(std::chrono::milliseconds max);

  /* Waits at most `max` until no client is connected: rank 0 whose open failed
   * keeps the store so, letting the others fail on their own deadline and name
   * the rank that did not arrive, not the store. */
  void await_clients_gone(std::chrono::milliseconds max);

  struct Conn; /* a client connection */

 private:
  void serve();
  void serve_loop(std::vector<Conn> &conns);
  void publish_open_lanes(const std::vector<Conn> &conns);
  std::mutex lanes_lock_;
  std::condition_variable lanes_changed_;
  int open_lanes_ = 0;          /* health lanes open and not said goodbye; guarded by lanes_lock_ */
  int open_clients_ = 0;        /* client connections open; guarded by lanes_lock_ */
  bool lanes_known_ = false;    /* the thread has counted them at least once since a lane opened */
  int listen_fd_ = -1;
  int stop_fd_ = -1; /* eventfd that wakes the thread to stop */
  std::string group_id_;
  std::thread thread_;
};

/* Safe to share between threads: one request at a time holds the
 * connection (a parked wait too, so a subgroup rendezvous takes a connection
 * of its own, another(), rather than block the others' opens behind it). */
class StoreClient : public gloo::rendezvous::Store {
 public:
  /* Connects to the store at `at`, retrying until timeout (the server may
   * start later); throws Error(PTO_ERR_TIMEOUT naming the address). */
  StoreClient(const struct sockaddr_in &at, const std::string &group_id, std::chrono::milliseconds timeout);
  ~StoreClient() override;

  void set(const std::string &key, const std::vector<char> &data) override;
  std::vector<char> get(const std::string &key) override;
  void wait(const std::vector<std::string> &keys) override;
  void wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &timeout) override;

  /* The health lane (above): this connection is rank's until bye(). */
  void hello(int rank);
  void bye();
  /* The ranks the store saw die (only those in `among` unless it is empty),
   * waiting at most `timeout` for the first; throws Error(PTO_ERR_TIMEOUT)
   * when it saw none, Error(PTO_ERR_DEVICE) when the store itself is gone. On
   * a connection of its own (the health lane stays this rank's). */
  std::vector<int> lost(std::chrono::milliseconds timeout, const std::vector<int> &among = {}) const;

  /* A new client of the same store and group, on a connection of its own. */
  std::unique_ptr<StoreClient> another() const;

  /* Every value this client got, by key (the group reads the peers' Gloo
   * addresses from it). */
  std::map<std::string, std::vector<char>> seen() const;

 private:
  std::vector<char> request(const std::vector<char> &payload, std::chrono::milliseconds timeout);
  void connect_until(std::chrono::steady_clock::time_point deadline);
  std::string where() const;

  const struct sockaddr_in at_;
  const std::string group_id_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex lock_; /* guards fd_ and seen_ */
  int fd_ = -1;
  std::map<std::string, std::vector<char>> seen_;
};

}  // namespace ptogloo

#endif
