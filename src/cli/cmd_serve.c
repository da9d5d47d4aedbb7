/* attncap serve: an HTTP server over one captioner (loaded once): the JSON API of src/cli/serve_http.c,
 * the batching queue of serve_queue.c and the page of web/index.html. SIGTERM or SIGINT drains the
 * requests in flight, then exits 0. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncap/attncap.h"
#include "commands.h"
#include "messages.h"
#include "options.h"
#include "serve.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attncap serve [--host 127.0.0.1] [--port 8080] [--model FILE] [--threads N] [--workers N]\n"
            "                     [--max-body BYTES] [--queue N] [--batch N] [--nbest N] [--timeout S]\n\n"
            "An HTTP server that loads the model once and captions the photos sent to it; its page (at /,\n"
            "embedded in the program, no network needed) shows the caption, and for each word where the model\n"
            "looked. Requests that arrive together are captioned together.\n\n"
            "  --host ADDR       the address to listen on (default 127.0.0.1: this machine only; another\n"
            "                    address makes the server reachable from the network, and it says so)\n"
            "  --port N          the port (default 8080; 0: any free one, printed on stderr)\n"
            "  --model FILE      the model (default: $ATTNCAP_MODEL, else models/attncap.safetensors)\n"
            "  --encoder FILE    the encoder (default: found by the model's record)\n"
            "  --threads N       threads in all (default: $ATTNCAP_THREADS, else every core)\n"
            "  --workers N       captioners, each with its share of the threads, captioning batches side by\n"
            "                    side (default 1; each holds its own copy of the model)\n"
            "  --max-body BYTES  the largest request body (default 20000000); more is answered 413\n"
            "  --queue N         photos waiting at most besides those being captioned (default 64); more are\n"
            "                    answered 503, Retry-After: 1\n"
            "  --batch N         photos searched together at most, 1 to 8 (default 2): each worker's lanes take\n"
            "                    the next photo as soon as they are free and search those encoded meanwhile\n"
            "                    together; small groups let one lane encode while another searches\n"
            "  --nbest N         the most captions a request may ask for with ?nbest= (default 5)\n"
            "  --timeout S       seconds to receive a request's headers, and then its body (default 30): one\n"
            "                    slower is answered 408 and its connection closed (a slow sender holds no\n"
            "                    thread meanwhile); a connection silent that long is closed\n\n"
            "API (JSON answers; errors are {\"error\": \"...\"} with a 4xx or 5xx status):\n"
            "  POST /v1/caption[?attention=1][&nbest=N]   the photo as the body (image/jpeg, image/png,\n"
            "       image/webp, image/tiff, image/bmp, application/octet-stream) or multipart/form-data field\n"
            "       \"photo\": the line `attncap caption --json` prints (\"attention\" and \"grid\" with attention=1,\n"
            "       \"alternatives\" with nbest > 1). 400 unreadable photo, 413 body or pixels over the limit,\n"
            "       415 other content types, 408 body too slow, 503 queue full\n"
            "  POST /v1/evaluate   {\"references\": [[\"...\", ...], ...], \"candidates\": [\"...\", ...],\n"
            "       \"meteor\": true}: {\"n\", \"bleu\": [4], \"meteor\", \"rouge_l\", \"cider_d\"} as `attncap eval`\n"
            "  GET /v1/health      {\"status\": \"ok\", \"version\", \"model\", \"queue\", \"queue_capacity\", ...}\n"
            "  GET /metrics        Prometheus text: requests by path and status, errors, latency and batch-size\n"
            "                      histograms, the queue's length\n"
            "  GET /               the page\n");
}

int cmd_serve(int argc, char **argv) {
    const char *host = "127.0.0.1", *model = NULL, *encoder = NULL;
    int port = 8080, threads = 0, workers = 1, queue = 64, batch = 2, nbest = 5, timeout = 30;
    unsigned long long max_body = 20000000ull;
    const cli_opt opts[] = {
        OPT_STR("--host", &host),
        OPT_INT("--port", &port, 0, 65535),
        OPT_STR("--model", &model),
        OPT_STR("--encoder", &encoder),
        OPT_INT("--threads", &threads, 1, 1024),
        OPT_INT("--workers", &workers, 1, 64),
        OPT_U64("--max-body", &max_body, 1024, 1ull << 31),
        OPT_INT("--queue", &queue, 1, 100000),
        OPT_INT("--batch", &batch, 1, 8),
        OPT_INT("--nbest", &nbest, 1, 100),
        OPT_INT("--timeout", &timeout, 1, 3600),
        OPT_END,
    };
    int n = cli_parse("serve", argc, argv, opts, 0, usage);
    if (n < 0) return n == CLI_HELP ? 0 : 2;

    /* SIGTERM and SIGINT are taken by sigwait below: blocked here, before any thread starts, so every
     * thread inherits the mask */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    /* each worker its own captioner, with its share of the threads */
    long total = threads;
    if (!total) total = getenv("ATTNCAP_THREADS") ? atol(getenv("ATTNCAP_THREADS")) : sysconf(_SC_NPROCESSORS_ONLN);
    ac_captioner_opts co;
    ac_captioner_opts_init(&co);
    co.encoder = encoder;
    co.threads = total / workers > 1 ? (int)(total / workers) : 1;
    co.nbest = nbest;
    ac_captioner *cs[64] = {NULL};
    ac_err err = {{0}, 0};
    int rc = 1;
    cli_queue *q = NULL;
    cli_server *s = NULL;
    for (int i = 0; i < workers; i++)
        if (ac_captioner_open(model, &co, &cs[i], &err) < 0) {
            fprintf(stderr, "attncap serve: %s%s\n", err.msg, cli_hint(&err));
            goto done;
        }
    if (!(q = cli_queue_start(cs, workers, queue, batch))) {
        fprintf(stderr, "attncap serve: cannot start the captioning threads\n");
        goto done;
    }
    const char *model_path = ac_model_path(ac_captioner_model(cs[0]));
    const cli_server_opts so = {host, port, (size_t)max_body, (unsigned)timeout, (unsigned)timeout, 2, nbest, queue};
    const char *why = NULL;
    if (!(s = cli_server_start(&so, model_path, q, &why))) {
        fprintf(stderr, "attncap serve: %s port %d: %s\n", host, port, why);
        goto done;
    }
    const int loopback = !strcmp(host, "127.0.0.1") || !strcmp(host, "::1") || !strcmp(host, "localhost");
    if (!loopback)
        fprintf(stderr, "attncap serve: note: listening on %s, not 127.0.0.1: other machines can reach this server "
                        "(it has no authentication)\n", host);
    fprintf(stderr, "attncap serve: http://%s%s%s:%d/ (model %s; %d worker%s of %d thread%s; Ctrl-C or SIGTERM stops)\n",
            strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", cli_server_port(s), model_path, workers,
            workers == 1 ? "" : "s", co.threads, co.threads == 1 ? "" : "s");

    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "attncap serve: %s: finishing the requests in flight\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    const int left = cli_server_drain(s, timeout + 5.0);
    if (left)
        fprintf(stderr, "attncap serve: stopped with %d request%s unanswered after %d s\n", left, left == 1 ? "" : "s",
                timeout + 5);
    else
        fprintf(stderr, "attncap serve: stopped\n");
    rc = left ? 1 : 0;
done:
    if (q) cli_queue_stop(q); /* captions what is queued, resuming those connections: then the daemon can stop */
    cli_server_free(s);
    cli_queue_free(q);
    for (int i = 0; i < workers; i++) ac_captioner_close(cs[i]);
    return rc;
}
