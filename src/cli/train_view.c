/* train_view.c: what attncap train prints (train_view.h). */
#include "train_view.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void train_view_event(const ac_train_event *ev, void *user) {
    train_view *v = user;
    if (v->quiet) return;
    switch (ev->kind) {
    case AC_TRAIN_START:
        v->has_text = ev->text_captions > 0;
        fprintf(stderr,
                "train: %d captions (%s flipped copies), %d captions without photos (%d a step), %d val photos, "
                "vocabulary %d, %zu parameters (model file %.1f MiB as F32, %.1f MiB with --fp16), %d steps per epoch%s%s\n",
                ev->captions, ev->flipped ? "with" : "no", ev->text_captions, ev->text_batch, ev->val_photos,
                ev->vocab, ev->params, ev->params * 4.0 / 1048576, ev->params * 2.0 / 1048576, ev->steps,
                ev->grouped ? " (batches of whole photos)" : "",
                ev->mapped_features ? "; features read from their mapped shard files" : "");
        if (ev->held_out > 0)
            fprintf(stderr, "train: note: the data set has no val photos: %d of its %d training photos with features "
                            "are held out for validation (to choose them, give a split column: "
                            "image<TAB>caption<TAB>train|val; attncap help data)\n",
                    ev->held_out, ev->photos - ev->missing_photos + ev->held_out);
        if (ev->missing_photos > 0)
            fprintf(stderr, "train: warning: %d of %d training photos have no features in %s and are left out "
                            "(attncap features --out %s PHOTOS... adds them)\n",
                    ev->missing_photos, ev->photos, v->features, v->features);
        break;
    case AC_TRAIN_RESUMED:
        fprintf(stderr, "train: resuming from step %ld (epoch %d/%d, batch %d)\n", ev->step, ev->epoch, ev->epochs,
                ev->pos);
        if (ev->note) fprintf(stderr, "train: --force: %s\n", ev->note);
        break;
    case AC_TRAIN_FINISHED: {
        static const char *why[] = {"all epochs done", "stopped early: no improvement", "the step limit reached",
                                    "already finished"};
        cli_progress_clear(&v->bar);
        fprintf(stderr, "train: %s%s at step %ld (%d of %d epochs)", ev->finish == AC_TRAIN_WAS_FINISHED ? "" : "finished: ",
                why[ev->finish], ev->step, ev->epoch, ev->epochs);
        if (isfinite(ev->best_score))
            fprintf(stderr, "; best val %s %.4f at step %ld",
                    !strcmp(ev->metric, "loss") ? "loss" : !strcmp(ev->metric, "bleu4") ? "BLEU-4" : "CIDEr-D",
                    !strcmp(ev->metric, "loss") ? -ev->best_score : ev->best_score, ev->best_step);
        fprintf(stderr, ", saved in %s%s\n", v->out,
                ev->finish != AC_TRAIN_WAS_FINISHED ? ""
                : ev->stopping                     ? " (it had stopped early)"
                                                   : " (a larger --epochs continues it)");
        break;
    }
    case AC_TRAIN_EPOCH:
        cli_progress_finish(&v->bar);
        snprintf(v->label, sizeof v->label, "epoch %d/%d", ev->epoch, ev->epochs);
        cli_progress_start(&v->bar, v->label, (uint64_t)ev->steps, 0);
        v->pos0 = ev->pos, v->t_line = cli_now();
        break;
    case AC_TRAIN_PROGRESS:
        if (isfinite(ev->reward)) /* self-critical training: its samples' reward (it has no text batches) */
            snprintf(v->bar.extra, sizeof v->bar.extra, "loss %.3f reward %.3f %.0f tok/s", ev->loss, ev->reward,
                     ev->tok_per_s);
        else if (v->has_text)
            snprintf(v->bar.extra, sizeof v->bar.extra, "loss %.3f text %.3f %.0f tok/s", ev->loss, ev->text_loss,
                     ev->tok_per_s);
        else
            snprintf(v->bar.extra, sizeof v->bar.extra, "loss %.3f %.0f tok/s", ev->loss, ev->tok_per_s);
        cli_progress_update(&v->bar, (uint64_t)ev->pos);
        if (!v->bar.enabled && cli_now() - v->t_line >= 60) {
            /* Not a terminal (a log file): one line a minute instead of the bar. */
            const double rate = ev->seconds > 0 ? (ev->pos - v->pos0) / ev->seconds : 0; /* steps/s this epoch */
            const double eta = rate > 0 ? (ev->steps - ev->pos) / rate : 0;
            fprintf(stderr, "epoch %d/%d step %d/%d: %s, epoch ETA %d:%02d\n", ev->epoch, ev->epochs, ev->pos,
                    ev->steps, v->bar.extra, (int)(eta / 60), (int)eta % 60);
            v->t_line = cli_now();
        }
        break;
    case AC_TRAIN_VALIDATING:
        cli_progress_clear(&v->bar);
        break;
    case AC_TRAIN_EVALUATION:
        printf("epoch %.2f step %ld: train loss %.4f", ev->epoch_frac, ev->step, ev->train_loss);
        if (isfinite(ev->reward)) printf(", reward %.4f", ev->reward);
        printf(", val loss %.4f", ev->val_loss);
        if (isfinite(ev->bleu4)) printf(", val BLEU-4 %.4f, CIDEr-D %.4f", ev->bleu4, ev->cider);
        printf(", lr %.3g, %.0f tok/s, %.0f min%s\n", ev->lr, ev->window_tok_per_s, ev->minutes,
               ev->best ? " (best, saved)" : ev->stopping ? " (stopping: no improvement)" : "");
        fflush(stdout);
        break;
    }
}
