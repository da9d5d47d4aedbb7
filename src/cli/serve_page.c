/* attncap serve's page: web/index.html (one file: its styles and script inline, nothing fetched from
 * elsewhere), embedded at build time by the assembler's .incbin (the Makefile rebuilds this object when
 * the page changes). The only file the server sends. */
#include "serve.h"

__asm__(".section .rodata\n"
        ".global cli_page_html\n"
        ".type cli_page_html, @object\n"
        ".balign 16\n"
        "cli_page_html:\n"
        ".incbin \"web/index.html\"\n"
        "cli_page_html_end:\n"
        ".byte 0\n"
        ".global cli_page_html_len\n"
        ".type cli_page_html_len, @object\n"
        ".balign 4\n"
        "cli_page_html_len:\n"
        ".int cli_page_html_end - cli_page_html\n"
        ".previous\n");
