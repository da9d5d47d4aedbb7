/* objects.c: COCO's 80 categories, our synonym lists, and the caption matcher (see objects.h). In
 * data/, below the search: the naming asks which tag words name an object; eval/'s scores count them.
 *
 * The lists are ours, written for caption English (COCO and Flickr captions): singulars, irregular
 * plurals (regular ones are derived), common caption words and misspellings. Where a word is
 * ambiguous the choice follows how COCO photos are labelled, as CHAIR does: "bat" is a baseball bat,
 * "glove" a baseball glove, "bike" a bicycle, "computer" a laptop, "desk" a dining table. Phrases are
 * written as the tokenizer outputs them ("catcher 's mitt"), words separated by single spaces. */
#include "attncap/objects.h"

#include <stdlib.h>
#include <string.h>

#include "attncap/tokenize.h"

typedef struct {
    const char *name;
    const char *const *syn; /* NULL-terminated */
} category;

/* A NULL-terminated list with static storage (a file-scope compound literal). */
#define LIST(...) ((const char *const[]){__VA_ARGS__, NULL})

static const category CATEGORIES[AC_N_OBJECTS] = {
    {"person", LIST("person", "persons", "people", "man", "men", "woman", "women", "boy", "girl", "child", "children",
                    "kid", "baby", "toddler", "infant", "adult", "teen", "teenager", "youngster", "guy", "lady",
                    "gentleman", "gentlemen", "mother", "mom", "mum", "mommy", "mama", "momma", "father", "dad",
                    "daddy", "papa", "parent", "son", "daughter", "brother", "sister", "grandmother", "grandfather",
                    "grandma", "grandpa", "husband", "wife", "wives", "bride", "groom", "friend", "player", "batter",
                    "catcher", "pitcher", "umpire", "referee", "skier", "snowboarder", "surfer", "skateboarder",
                    "skater", "boarder", "diver", "rider", "biker", "cyclist", "bicyclist", "motorcyclist", "jockey", "cowboy", "cowgirl",
                    "chef", "baker", "worker", "officer", "policeman", "policemen", "policewoman", "policewomen", "cop",
                    "soldier", "sailor", "seaman", "seamen", "student", "tourist", "traveler", "traveller", "passenger", "pedestrian", "spectator",
                    "athlete", "runner", "jogger", "hiker", "climber", "swimmer", "kayaker", "fisherman", "fishermen",
                    "farmer", "vendor", "shopper", "customer", "waiter", "waitress", "doctor", "nurse", "teacher",
                    "clown", "performer", "musician", "guitarist", "dancer", "businessman", "businessmen",
                    "businesswoman", "businesswomen", "fireman", "firemen", "firefighter", "photographer", "ball player", "someone",
                    "somebody", "individual", "male", "female")},
    {"bicycle", LIST("bicycle", "bike", "mountain bike", "bmx")},
    {"car", LIST("car", "automobile", "sedan", "taxi", "taxicab", "cab", "suv", "van", "minivan", "jeep", "hatchback",
                 "coupe", "limo", "limousine", "police car", "cop car", "race car", "sports car", "passenger car")},
    {"motorcycle", LIST("motorcycle", "motorbike", "motor bike", "motor cycle", "dirt bike", "moped", "scooter",
                        "motor scooter")},
    {"airplane", LIST("airplane", "aeroplane", "plane", "jet", "jetliner", "airliner", "aircraft", "biplane", "seaplane", "passenger jet",
                      "passenger plane", "passenger airplane", "passenger aircraft", "passenger airliner")},
    {"bus", LIST("bus", "busses", "school bus", "minibus", "double decker", "trolley bus", "passenger bus", "tourist bus")},
    {"train", LIST("train", "locomotive", "subway", "tram", "trolley", "streetcar", "street car", "train car",
                   "trolley car", "railcar", "rail car", "caboose", "boxcar", "monorail", "subway car", "passenger train")},
    {"truck", LIST("truck", "pickup", "pickup truck", "pick up truck", "firetruck", "fire engine", "lorry",
                   "lorries", "semi", "tractor trailer", "big rig", "18 wheeler", "truck bed", "truck cab")},
    {"boat", LIST("boat", "ship", "sailboat", "sail boat", "canoe", "kayak", "yacht", "ferry", "raft", "rowboat",
                  "row boat", "speedboat", "speed boat", "motorboat", "tugboat", "tug boat", "barge", "gondola",
                  "jet ski", "houseboat", "catamaran", "steamboat", "passenger ship",
                  "passenger boat", "passenger ferry", "duck boat", "ski boat")},
    {"traffic light", LIST("traffic light", "traffic signal", "stop light", "stoplight")},
    {"fire hydrant", LIST("fire hydrant", "hydrant", "fire plug", "fireplug")},
    {"stop sign", LIST("stop sign")},
    {"parking meter", LIST("parking meter", "meter")},
    {"bench", LIST("bench", "park bench")},
    {"bird", LIST("bird", "pigeon", "dove", "seagull", "sea gull", "gull", "duck", "duckling", "goose", "geese",
                  "swan", "parrot", "macaw", "eagle", "hawk", "falcon", "owl", "crow", "raven", "sparrow", "finch",
                  "robin", "jay", "bluebird", "pelican", "flamingo", "heron", "egret", "stork", "ostrich", "emu",
                  "penguin", "peacock", "hummingbird", "woodpecker", "vulture", "albatross", "puffin", "cockatoo",
                  "parakeet", "hen", "rooster")},
    {"cat", LIST("cat", "kitten", "kitty", "kittycat", "feline", "tabby")},
    {"dog", LIST("dog", "puppy", "pup", "doggy", "doggie", "canine", "hound", "pooch", "mutt", "terrier", "poodle",
                 "labrador", "retriever", "bulldog", "bull dog", "pit bull", "pitbull", "bull terrier", "sheep dog", "cattle dog", "bird dog", "beagle", "dalmatian", "collie",
                 "husky", "chihuahua", "pug", "corgi", "dachshund", "greyhound", "sheepdog", "german shepherd",
                 "spaniel", "schnauzer", "rottweiler")},
    {"horse", LIST("horse", "pony", "foal", "colt", "stallion", "mare")},
    {"sheep", LIST("sheep", "lamb", "ram", "ewe")},
    {"cow", LIST("cow", "cattle", "bull", "calf", "calves", "ox", "oxen", "heifer", "longhorn")},
    {"elephant", LIST("elephant")},
    {"bear", LIST("bear", "polar bear", "grizzly", "grizzly bear")},
    {"zebra", LIST("zebra")},
    {"giraffe", LIST("giraffe")},
    {"backpack", LIST("backpack", "back pack", "rucksack", "knapsack", "bookbag", "book bag")},
    {"umbrella", LIST("umbrella", "parasol")},
    {"handbag", LIST("handbag", "hand bag", "purse", "pocketbook", "shoulder bag", "tote", "tote bag")},
    {"tie", LIST("tie", "necktie", "neck tie", "bow tie", "bowtie")},
    {"suitcase", LIST("suitcase", "suit case", "luggage", "baggage")},
    {"frisbee", LIST("frisbee", "frisbe", "frizbee", "flying disc")},
    {"skis", LIST("skis", "ski", "pair of skis")},
    {"snowboard", LIST("snowboard", "snow board")},
    {"sports ball", LIST("sports ball", "ball", "soccer ball", "tennis ball", "beach ball")},
    {"kite", LIST("kite")},
    {"baseball bat", LIST("baseball bat", "bat", "softball bat")},
    {"baseball glove", LIST("baseball glove", "glove", "mitt", "baseball mitt", "catcher 's mitt", "catchers mitt",
                            "softball glove")},
    {"skateboard", LIST("skateboard", "skate board")},
    {"surfboard", LIST("surfboard", "surf board", "boogie board", "body board", "bodyboard", "paddle board",
                       "paddleboard")},
    {"tennis racket", LIST("tennis racket", "racket", "racquet", "tennis racquet")},
    {"bottle", LIST("bottle", "wine bottle", "water bottle", "beer bottle", "baby bottle")},
    {"wine glass", LIST("wine glass", "wineglass", "glass of wine", "glasses of wine", "champagne glass")},
    {"cup", LIST("cup", "mug", "coffee cup", "coffee mug", "teacup", "tea cup")},
    {"fork", LIST("fork")},
    {"knife", LIST("knife", "knives")},
    {"spoon", LIST("spoon", "teaspoon")},
    {"bowl", LIST("bowl")},
    {"banana", LIST("banana")},
    {"apple", LIST("apple")},
    {"sandwich", LIST("sandwich", "sandwhich", "sub", "sub sandwich", "subway sandwich", "burger", "hamburger",
                      "cheeseburger", "hoagie", "panini")},
    {"orange", LIST("orange", "tangerine", "clementine")},
    {"broccoli", LIST("broccoli", "brocolli", "broccolli", "broccoli plant")},
    {"carrot", LIST("carrot", "baby carrot")},
    {"hot dog", LIST("hot dog", "hotdog", "corn dog", "chili dog", "chilli dog", "frankfurter")},
    {"pizza", LIST("pizza")},
    {"donut", LIST("donut", "doughnut", "cake donut", "cake doughnut")},
    {"cake", LIST("cake", "cupcake", "cup cake", "cheesecake", "carrot cake")},
    {"chair", LIST("chair", "armchair", "highchair", "high chair", "stool", "recliner", "desk chair", "computer chair")},
    {"couch", LIST("couch", "sofa", "loveseat", "love seat", "futon")},
    {"potted plant", LIST("potted plant", "plant", "houseplant", "house plant", "flower pot", "flowerpot", "planter")},
    {"bed", LIST("bed")},
    {"dining table", LIST("dining table", "table", "desk")},
    {"toilet", LIST("toilet", "urinal", "toilet bowl", "commode")},
    {"tv", LIST("tv", "t.v.", "television", "tv set", "flat screen", "flatscreen", "monitor", "computer monitor",
                "computer screen", "tv screen", "television screen", "desktop computer")},
    {"laptop", LIST("laptop", "lap top", "computer", "laptop computer", "notebook computer", "macbook", "netbook", "apple laptop",
                    "apple computer")},
    {"mouse", LIST("mouse", "mice", "computer mouse")},
    {"remote", LIST("remote", "remote control", "remote controller", "controller", "wii remote", "wiimote",
                    "tv remote", "television remote")},
    {"keyboard", LIST("keyboard", "computer keyboard")},
    {"cell phone", LIST("cell phone", "cellphone", "phone", "smartphone", "smart phone", "mobile phone", "iphone", "apple iphone",
                        "telephone")},
    {"microwave", LIST("microwave", "microwave oven")},
    {"oven", LIST("oven", "stove", "stovetop", "stove top")},
    {"toaster", LIST("toaster", "toaster oven")},
    {"sink", LIST("sink", "bowl sink")},
    {"refrigerator", LIST("refrigerator", "refridgerator", "fridge", "freezer", "icebox")},
    {"book", LIST("book", "textbook")},
    {"clock", LIST("clock", "grandfather clock")},
    {"vase", LIST("vase")},
    {"scissors", LIST("scissors", "scissor", "pair of scissors")},
    {"teddy bear", LIST("teddy bear", "teddy", "teddybear", "stuffed bear", "stuffed animal", "stuffed toy")},
    {"hair drier", LIST("hair drier", "hair dryer", "hairdryer", "hairdrier", "blow dryer", "blowdryer", "blow drier")},
    {"toothbrush", LIST("toothbrush", "tooth brush")},
};

/* Phrases that name no category: each stops a shorter synonym inside it from counting. */
static const char *const BLOCKERS[] = {
    "bus stop", "bus shelter", "train track", "toilet paper", "toilet tissue", "toilet roll", "ski slope", "ski lift",
    "ski resort", "ski lodge", "ski area", "ski run", "ski trail", "ski hill", "ski mountain", "ski mask", "ski pole",
    "ski glove", "ski goggles", "ski jacket", "ski boot", "oven mitt", "oven glove", "rubber glove", "boxing glove",
    "gardening glove", "work glove", "dvd player", "cd player", "record player", "mp3 player", "video player",
    "pitcher of", "power plant", "flower bed", "river bed", "bed of", "table tennis", "street light", "cable car",
    "chair lift", "super bowl", "rocking horse", "baby stroller", "baby carriage", "baby food", "snow man",
    "zebra crossing", "zebra print", "zebra stripes", "giraffe print", "orange juice", "phone booth", "phone line",
    "telephone booth", "telephone line", "telephone pole", "telephone wire", "wheel chair", "horse trailer", "spider man", "semi formal", "passenger seat",
    "passenger side", "passenger door", "passenger window", "cowboy hat", "cowboy boot", NULL,
};

/* Person words that, before an animal, say its age or role: "baby elephant" names an elephant only;
 * after "its" they are an animal's too ("an elephant and its baby"). */
static const char *const ANIMAL_MODIFIERS[] = {
    "baby", "babies", "adult", "adults", "mother", "mothers", "mom", "mama", "momma", "father", "daddy", NULL,
};
enum { PERSON = 0, FIRST_ANIMAL = 14, LAST_ANIMAL = 23, ORANGE = 49 }; /* in COCO's order (bird .. giraffe) */

/* "orange": words after which it is a colour ("is orange", "painted orange") and words before
 * which it is the fruit (function words, verbs, fruit parts); "and"/"or" + a colour keep it a colour. */
static const char *const ORANGE_COLOUR_BEFORE[] = {
    "is", "are", "was", "were", "painted", "colored", "coloured", "bright", "dark", "light", "pale", "in", "all",
    NULL,
};
static const char *const ORANGE_FRUIT_AFTER[] = {
    "and", "or", "on", "in", "with", "next", "near", "beside", "by", "at", "to", "from", "of", "is", "are", "was",
    "that", "which", "sitting", "sits", "laying", "lying", "resting", "being", "cut", "sliced", "peeled", "placed",
    "slice", "slices", "wedge", "wedges", "half", "halves", "peel", "peels", "segment", "segments", "tree", "trees",
    "'s", NULL,
};
static const char *const COLOURS[] = {
    "white", "black", "red", "blue", "green", "yellow", "brown", "gray", "grey", "pink", "purple", "silver", "gold",
    "tan", "orange", "beige", "teal", NULL,
};

const char *ac_object_name(int k) { return k >= 0 && k < AC_N_OBJECTS ? CATEGORIES[k].name : NULL; }

int ac_object_index(const char *name) {
    for (int k = 0; name && k < AC_N_OBJECTS; k++)
        if (!strcmp(CATEGORIES[k].name, name)) return k;
    return -1;
}

const char *const *ac_object_synonyms(int k) { return k >= 0 && k < AC_N_OBJECTS ? CATEGORIES[k].syn : NULL; }
const char *const *ac_object_blockers(void) { return BLOCKERS; }

/* ---- matching ---- */

static int is_sep(char c) { return c == ' ' || c == '-'; }
static size_t word_len(const char *t) {
    size_t n = 0;
    while (t[n] && !is_sep(t[n])) n++;
    return n;
}
static const char *skip_seps(const char *t) {
    while (is_sep(*t)) t++;
    return t;
}

/* Whether the text word w (n bytes) is the phrase word p (m bytes) or, for a phrase's last word,
 * one of its regular plurals: p+s; p+es after s, x, z, ch, sh, o; p-y+ies after a consonant. */
static int word_is(const char *w, size_t n, const char *p, size_t m, int last) {
    if (n == m) return !memcmp(w, p, n);
    if (!last || n < m + 1) return 0;
    if (p[m - 1] == 'y' && m >= 2 && !strchr("aeiou", p[m - 2]) && n == m + 2 && !memcmp(w, p, m - 1) &&
        !memcmp(w + m - 1, "ies", 3))
        return 1;
    if (memcmp(w, p, m)) return 0;
    if (n == m + 1) return w[m] == 's';
    int sibilant = strchr("sxzo", p[m - 1]) || (m >= 2 && p[m - 1] == 'h' && (p[m - 2] == 'c' || p[m - 2] == 's'));
    return n == m + 2 && sibilant && w[m] == 'e' && w[m + 1] == 's';
}

/* If the phrase (space-separated words) matches the text at t (a word start), returns the number
 * of text words it covers and sets *end past them; else 0. */
static int match_phrase(const char *t, const char *phrase, const char **end) {
    int k = 0;
    for (const char *p = phrase;;) {
        size_t m = strcspn(p, " "), n = word_len(t);
        if (n == 0 || !word_is(t, n, p, m, p[m] == 0)) return 0;
        t += n, k++;
        if (!p[m]) break;
        p += m + 1;
        t = skip_seps(t);
    }
    *end = t;
    return k;
}

static int word_in(const char *w, size_t n, const char *const *list) {
    for (; *list; list++)
        if (strlen(*list) == n && !memcmp(w, *list, n)) return 1;
    return 0;
}

/* The phrases of every category, then the blockers, grouped by first byte, in table order within a
 * byte (categories in order, each one's synonyms in order, then the blockers), each with the length of
 * its first word: best_match scans only the phrases that start with the text word's byte and skips by
 * length those that cannot match it, so the first longest match is the one a scan of the whole table
 * finds. Made per call of the matcher (one pass over the ~700 phrases, what matching one word
 * without it cost); 9,000 vocabulary words share one. */
typedef struct {
    const char *text;
    short cat;              /* -1: a blocker */
    unsigned char len;      /* of its first word (the table's longest: 13 bytes; 255: longer) */
    unsigned char one_word; /* a one-word phrase also matches its plurals (word_is) */
} phrase;
typedef struct { /* 16 KB, on the caller's stack */
    phrase all[AC_OBJECT_PHRASES_MAX];
    short start[257]; /* the phrases starting with byte b: all[start[b] .. start[b + 1]) */
} phrase_index;

/* Every phrase in table order: the categories' synonyms, then the blockers (cat -1). */
static int next_phrase(int *k, const char *const **s) {
    while (!**s) {
        if (++*k > AC_N_OBJECTS) return 0;
        *s = *k < AC_N_OBJECTS ? CATEGORIES[*k].syn : BLOCKERS;
    }
    return 1;
}

/* (test_objects checks that the table fits: ac_object_synonyms and ac_object_blockers, counted) */
static void phrase_index_init(phrase_index *ix) {
    short count[256] = {0}, at[256];
    int k = 0, total = 0;
    const char *const *s = CATEGORIES[0].syn;
    for (; next_phrase(&k, &s) && total < AC_OBJECT_PHRASES_MAX; s++, total++) count[(unsigned char)**s]++;
    ix->start[0] = 0;
    for (int b = 0; b < 256; b++) ix->start[b + 1] = (short)(ix->start[b] + count[b]);
    memcpy(at, ix->start, sizeof at);
    k = 0, s = CATEGORIES[0].syn;
    for (int i = 0; i < total && next_phrase(&k, &s); s++, i++) {
        const size_t m = strcspn(*s, " ");
        ix->all[at[(unsigned char)**s]++] =
            (phrase){*s, (short)(k < AC_N_OBJECTS ? k : -1), (unsigned char)(m < 255 ? m : 255), (*s)[m] == 0};
    }
}

/* The longest phrase at t: its category (-1: a blocker) and word count (0: nothing matches);
 * *end is set past it. Ties go to the first in table order. A phrase can start at a text word of n
 * bytes only if its first word is as long, or, for a one-word phrase, as long as one of its plurals
 * (word_is: 1 or 2 bytes more): most phrases with the word's first letter fail this before
 * match_phrase's work. */
static int best_match(const phrase_index *ix, const char *t, int *cat, const char **end) {
    int best = 0;
    *cat = -1;
    if (!*t) return 0;
    const unsigned char b = (unsigned char)*t;
    const size_t n = word_len(t);
    for (const phrase *p = ix->all + ix->start[b], *stop = ix->all + ix->start[b + 1]; p < stop; p++) {
        if (!(n == p->len || (p->one_word && (n == p->len + 1u || n == p->len + 2u)))) continue;
        const char *e;
        const int w = match_phrase(t, p->text, &e);
        if (w > best) best = w, *cat = p->cat, *end = e;
    }
    return best;
}

typedef struct {
    const char *p;
    size_t n;
} word;

static int word_is_one_of(word w, const char *const *list) { return w.p && word_in(w.p, w.n, list); }

/* "orange" at t, after the words before[0] (just before) and before[1]: the fruit, or a colour? */
static int orange_is_fruit(const word before[2], const char *t) {
    if (word_is_one_of(before[0], ORANGE_COLOUR_BEFORE)) return 0;
    if (before[0].p && (word_in(before[0].p, before[0].n, LIST("and", "or"))) && word_is_one_of(before[1], COLOURS))
        return 0; /* "white and orange" */
    const char *next = skip_seps(t + word_len(t));
    size_t nn = word_len(next);
    if (nn == 0) return 1;
    if (!word_in(next, nn, ORANGE_FRUIT_AFTER)) return 0; /* "orange shirt" */
    if (word_in(next, nn, LIST("and", "or"))) {
        const char *after = skip_seps(next + nn);
        if (word_in(after, word_len(after), COLOURS)) return 0; /* "orange and white" */
    }
    return 1;
}

static int in_tokens(const phrase_index *ix, const char *tokens, uint8_t present[AC_N_OBJECTS]) {
    memset(present, 0, AC_N_OBJECTS);
    word before[2] = {{NULL, 0}, {NULL, 0}};
    for (const char *t = skip_seps(tokens); *t;) {
        int cat;
        const char *end;
        size_t n = word_len(t);
        int w = best_match(ix, t, &cat, &end);
        if (w == 0) end = t + n;
        if (w == 1 && cat == PERSON && word_in(t, n, ANIMAL_MODIFIERS)) {
            int next_cat;
            const char *next_end;
            if (best_match(ix, skip_seps(end), &next_cat, &next_end) && next_cat >= FIRST_ANIMAL && next_cat <= LAST_ANIMAL)
                cat = -1; /* "baby elephant": the next word names the animal */
            if (before[0].p && word_in(before[0].p, before[0].n, LIST("its"))) cat = -1; /* "its mother" */
        }
        if (w == 1 && cat == ORANGE && n == 6 && !memcmp(t, "orange", 6) && !orange_is_fruit(before, t)) cat = -1;
        if (w > 0 && cat >= 0) present[cat] = 1;
        for (const char *q = t; q < end; q = skip_seps(q + word_len(q))) /* the words used up */
            before[1] = before[0], before[0] = (word){q, word_len(q)};
        t = skip_seps(end);
    }
    int count = 0;
    for (int k = 0; k < AC_N_OBJECTS; k++) count += present[k];
    return count;
}

int ac_objects_in_tokens(const char *tokens, uint8_t present[AC_N_OBJECTS]) {
    phrase_index ix;
    phrase_index_init(&ix);
    return in_tokens(&ix, tokens, present);
}

int ac_objects_in_text(const char *caption, uint8_t present[AC_N_OBJECTS], ac_err *err) {
    ac_tokens tk;
    memset(present, 0, AC_N_OBJECTS);
    if (ac_tokenize(caption, &tk, err)) return -1;
    char *joined = ac_tokens_join(&tk);
    ac_tokens_free(&tk);
    if (!joined) return ac_errf(err, "out of memory");
    int n = ac_objects_in_tokens(joined, present);
    free(joined);
    return n;
}

/* Appends s (len bytes) at *at, keeping buf NUL-terminated within n bytes; *at counts it all. */
static void append(char *buf, size_t n, size_t *at, const char *s, size_t len) {
    if (n && *at < n - 1) {
        size_t c = len < n - 1 - *at ? len : n - 1 - *at;
        memcpy(buf + *at, s, c);
        buf[*at + c] = 0;
    }
    *at += len;
}

void ac_objects_of_vocab(const ac_vocab *v, signed char *word_object) {
    const int V = ac_vocab_size(v);
    phrase_index ix;
    phrase_index_init(&ix);
    for (int w = 0; w < V; w++) {
        uint8_t present[AC_N_OBJECTS];
        const char *word = ac_vocab_word(v, w);
        word_object[w] = -1;
        if (w <= AC_UNK || !word || !in_tokens(&ix, word, present)) continue;
        for (int k = 0; k < AC_N_OBJECTS && word_object[w] < 0; k++)
            if (present[k]) word_object[w] = (signed char)k;
    }
}

void ac_objects_repeatable(const ac_vocab *v, unsigned char *repeatable) {
    const int V = ac_vocab_size(v), person = ac_object_index("person");
    phrase_index ix;
    phrase_index_init(&ix);
    for (int w = AC_UNK + 1; w < V; w++) {
        uint8_t present[AC_N_OBJECTS];
        const char *word = ac_vocab_word(v, w);
        if (word && in_tokens(&ix, word, present) && !present[person]) repeatable[w] = 1;
    }
}

size_t ac_objects_join(const uint8_t present[AC_N_OBJECTS], const char *sep, char *buf, size_t n) {
    size_t at = 0;
    if (n) buf[0] = 0;
    for (int k = 0; k < AC_N_OBJECTS; k++) {
        if (!present[k]) continue;
        if (at) append(buf, n, &at, sep, strlen(sep));
        append(buf, n, &at, CATEGORIES[k].name, strlen(CATEGORIES[k].name));
    }
    return at;
}
