// attncap serve's page in headless Chromium (puppeteer-core over Debian's chromium): load the page,
// upload a photo, check the caption's text, hover each word and check that the attention canvas's
// pixels change from word to word, screenshot. Prints the tests/lib.sh protocol's ok/FAIL lines.
// usage: node page_test.js URL PHOTO WANT_CAPTION SCREENSHOT.png PROFILE_DIR
"use strict";
const puppeteer = require("puppeteer-core");
const crypto = require("crypto");
const [url, photo, want, shot, profile] = process.argv.slice(2);
let failed = 0;
const ok = (name) => console.log("ok " + name);
const fail = (name, why) => { console.log("FAIL " + name + ": " + why); failed++; };

// A model with detected regions (the repo's has none): the caption's answer is replaced by one with two
// boxes and a region_attention whose largest weight is box 0 for "dog", box 1 for "grass"; the box a
// word attended most is drawn lit (#ffd43b), the other not.
async function regions(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 800, height: 900, deviceScaleFactor: 1 });
  const answer = { image: "", caption: "a dog on grass", tokens: ["a", "dog", "on", "grass"], logprob: -3, score: -1,
    confidence: 0.5, tags: [], overlays: [], grid: [2, 2],
    attention: [[0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25], [0.1, 0.1, 0.1, 0.7]],
    regions: [{ label: "dog", score: 0.9, box: [0.1, 0.1, 0.45, 0.45] }, { label: "person", score: 0.8, box: [0.55, 0.55, 0.9, 0.9] }],
    region_attention: [[0.5, 0.5], [0.9, 0.1], [0.5, 0.5], [0.2, 0.8]] };
  await page.setRequestInterception(true);
  page.on("request", (r) => {
    if (r.url().includes("/v1/caption")) r.respond({ status: 200, contentType: "application/json", body: JSON.stringify(answer) });
    else r.continue();
  });
  await page.goto(url, { waitUntil: "load" });
  await (await page.$("#file")).uploadFile(photo);
  await page.waitForFunction(() => document.querySelectorAll("#caption .word").length === 4, { timeout: 30000 });
  const lit = (x, y) => page.$eval("#attn", (c, x, y) => {
    const d = c.getContext("2d").getImageData(Math.round(x * c.width), Math.round(y * c.height), 1, 1).data;
    return d[0] > 200 && d[1] > 170 && d[2] < 120 && d[3] > 200;
  }, x, y);
  const words = await page.$$("#caption .word");
  await words[1].hover();
  const a0 = await lit(0.27, 0.1), a1 = await lit(0.72, 0.55);
  await words[3].hover();
  const b0 = await lit(0.27, 0.1), b1 = await lit(0.72, 0.55);
  const listed = await page.$eval("#regions", (e) => e.textContent);
  if (!(a0 && !a1 && !b0 && b1)) fail("page_regions_lit", "dog: box0 " + a0 + " box1 " + a1 + "; grass: box0 " + b0 + " box1 " + b1);
  else if (!/dog \(90%\)/.test(listed)) fail("page_regions_lit", "regions list: " + listed);
  else ok("page_regions_lit");
  await page.close();
}

(async () => {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run", "--user-data-dir=" + profile],
  });
  try {
    const page = await browser.newPage();
    const offsite = [];
    await page.setRequestInterception(true);
    page.on("request", (r) => { if (!r.url().startsWith(url) && !r.url().startsWith("blob:") && !r.url().startsWith("data:")) { offsite.push(r.url()); r.abort(); } else r.continue(); });
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.setViewport({ width: 390, height: 844, deviceScaleFactor: 1 }); // a phone's width
    await page.goto(url, { waitUntil: "load" });
    const input = await page.$("#file");
    await input.uploadFile(photo);
    await page.waitForFunction(() => document.querySelectorAll("#caption .word").length > 0 || document.querySelector("#status.err"), { timeout: 60000 });
    const text = await page.$$eval("#caption .word", (bs) => bs.map((b) => b.textContent).join(" "));
    if (text === want) ok("page_caption_text"); else fail("page_caption_text", "'" + text + "' != '" + want + "'");
    const conf = await page.$eval("#conf", (e) => e.textContent);
    if (/confidence (\d+%|unknown)/.test(conf)) ok("page_confidence"); else fail("page_confidence", conf);

    // hover each word: the canvas's pixels differ between every two consecutive words
    const words = await page.$$("#caption .word");
    const hashes = [];
    for (const w of words) {
      await w.hover();
      const px = await page.$eval("#attn", (c) => Array.from(c.getContext("2d").getImageData(0, 0, c.width, c.height).data).join(","));
      hashes.push(crypto.createHash("sha1").update(px).digest("hex"));
    }
    const same = hashes.filter((h, i) => i > 0 && h === hashes[i - 1]).length;
    const blank = await page.$eval("#attn", (c) => c.getContext("2d").getImageData(0, 0, c.width, c.height).data.every((v) => v === 0));
    if (words.length < 2) fail("page_hover_changes_attention", "fewer than 2 words");
    else if (same) fail("page_hover_changes_attention", same + " of " + (words.length - 1) + " hovers left the canvas unchanged");
    else if (blank) fail("page_hover_changes_attention", "the canvas is blank");
    else ok("page_hover_changes_attention");

    // keyboard: focusing a word (Tab) draws its map, and the phone-width layout does not overflow
    await page.mouse.move(0, 0);
    await words[0].focus();
    const onFocus = await page.$eval("#caption .word", (b) => b.classList.contains("on"));
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
    if (!onFocus) fail("page_keyboard_and_phone_width", "focusing a word does not show it");
    else if (overflow) fail("page_keyboard_and_phone_width", "wider than a 390 px screen");
    else ok("page_keyboard_and_phone_width");

    await words[Math.min(4, words.length - 1)].hover();
    await page.screenshot({ path: shot, fullPage: true });
    if (offsite.length || errors.length) fail("page_offline_no_errors", "off-site: " + offsite.join(" ") + " errors: " + errors.join("; "));
    else ok("page_offline_no_errors");
    await page.close();
    await regions(browser);
  } finally {
    await browser.close();
  }
  process.exit(failed ? 1 : 0);
})().catch((e) => { console.log("FAIL page: " + e.message); process.exit(1); });
