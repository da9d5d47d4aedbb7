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
  } finally {
    await browser.close();
  }
  process.exit(failed ? 1 : 0);
})().catch((e) => { console.log("FAIL page: " + e.message); process.exit(1); });
