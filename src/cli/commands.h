/* The CLI's subcommands: each cmd_*.c parses its flags and calls the library. */
#ifndef ATTNCAP_CLI_COMMANDS_H
#define ATTNCAP_CLI_COMMANDS_H
int cmd_classify(int argc, char **argv);
int cmd_detect(int argc, char **argv);
int cmd_features(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_caption(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_presence(int argc, char **argv);
int cmd_ground(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_serve(int argc, char **argv);
#endif
