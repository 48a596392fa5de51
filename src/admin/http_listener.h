// The connection handling of the admin HTTP server: a bounded front for cpp-httplib's request
// handling, because httplib 0.11 gives every accepted connection a pool thread that waits on
// the client (a per-read timeout only, an unbounded queue): 10 clients that send a header
// slowly hold every thread and /ready stops answering (issue 11).
//
// One thread polls the listening socket and every connection that is waiting for a request; it
// reads requests itself, so an idle or slow client costs a file descriptor and a buffer, never a
// handler thread. A request goes to the handler threads only once it is complete in the buffer
// (request line, headers and Content-Length body), so handlers never wait on a client read.
//  - A connection must deliver a whole request within `read_timeout` of its accept (or of the
//    end of its previous response); otherwise it is closed.
//  - At most `max_connections` are open; one more is answered 503 and closed at once.
//  - A request larger than `max_request_bytes` is answered 431 (headers) or 413 (body), closed.
//  - A response that is not written within `write_timeout` closes its connection.
//  - The port is bound exclusively (SO_REUSEADDR, never SO_REUSEPORT): a port in use is an
//    error naming host:port, never a second listener sharing the port.
//  - Stop() returns whatever state Start left things in (no accept to interrupt: the loop polls
//    a stop event too).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace httplib {
class Stream;
}

namespace cxds {

// Limits of the admin HTTP server. The defaults fit an admin port that a few scrapers, probes
// and people use: a request is small and quick, and nothing there is worth a waiting thread.
struct AdminLimits {
  // Handler threads (handlers are quick; reading and waiting on clients are not done there).
  int threads = 2;
  // Open connections at once; one more is answered 503 and closed.
  int max_connections = 128;
  // A connection is closed if a whole request has not arrived within this time from its accept
  // or from the end of its previous response (slowloris, idle keep-alive).
  absl::Duration read_timeout = absl::Seconds(10);
  // Per response; a response not written by then closes the connection.
  absl::Duration write_timeout = absl::Seconds(10);
  // Request line, headers and body together; larger is answered 431 or 413 and closed.
  size_t max_request_bytes = 64 * 1024;
  // Keep-alive requests on one connection; the last one is answered with "Connection: close".
  int max_requests_per_connection = 100;
};

class HttpListener {
 public:
  // Handles one request read from `stream` (which holds it whole) and writes the response.
  // `close_connection`: answer with "Connection: close"; set `connection_closed` if the client
  // asked for it. Returns false if the connection is unusable (a failed write). Runs on a
  // handler thread.
  using Handler = std::function<bool(httplib::Stream& stream, bool close_connection, bool& connection_closed)>;

  HttpListener(AdminLimits limits, Handler handler);
  ~HttpListener();  // stops
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Binds `host:port` exclusively (port 0 picks one; "[::1]" style hosts are accepted) and
  // starts the threads. Call once.
  absl::Status Start(const std::string& host, int port);
  int port() const { return port_; }
  // Closes every connection and joins the threads; a response being written is cut. Safe at
  // any time, also right after Start, and more than once.
  void Stop();

  int open_connections() const { return open_.load(); }
  uint64_t rejected_connections() const { return rejected_.load(); }    // over max_connections
  uint64_t timed_out_connections() const { return timed_out_.load(); }  // no whole request in time

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  struct Connection;

  void PollLoop();
  void HandlerLoop();
  // Accepts what is pending; false if accepting failed (out of descriptors).
  bool AcceptAll(SteadyTime now);
  // Reads what `conn` has sent. Returns false when the connection is finished with (closed,
  // rejected or handed to a handler thread).
  bool ReadFrom(Connection& conn, SteadyTime now);
  // Answers a refused connection with a short response and closes it without resetting it
  // (the response must not be lost to an RST): see `closing_`.
  void Refuse(int fd, const char* response, SteadyTime now);
  void Dispatch(std::unique_ptr<Connection> conn);
  void Finish(std::unique_ptr<Connection> conn, bool keep);
  void CloseConnection(Connection& conn);

  const AdminLimits limits_;
  const Handler handler_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // eventfd, written once by Stop; every poll watches it
  int wake_fd_ = -1;  // eventfd: a handler thread gave a connection back to the poll loop
  int port_ = 0;

  std::mutex mu_;
  std::condition_variable ready_cv_;
  bool started_ = false;
  bool stopping_ = false;
  std::deque<std::unique_ptr<Connection>> ready_;      // whole requests waiting for a handler
  std::vector<std::unique_ptr<Connection>> returned_;  // kept alive, back to the poll loop

  // Owned by the poll thread only.
  std::vector<std::unique_ptr<Connection>> waiting_;  // reading a request
  struct Closing {
    int fd;
    SteadyTime deadline;
  };
  std::vector<Closing> closing_;  // refused: write side shut down, draining the client's bytes

  std::atomic<int> open_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> timed_out_{0};
  std::thread poll_thread_;
  std::vector<std::thread> handler_threads_;
};

}  // namespace cxds
