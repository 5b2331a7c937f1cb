"""The home page, the explorer and a run's page in headless Chromium: they render with no console
error (a Content-Security-Policy violation is one) and no request leaving the server; a filter
change updates the URL and the table; the charts load; the copy buttons appear (the script ran);
dark mode follows the system."""

import json
import urllib.parse
import urllib.request


# The runs table (the best configurations are another table of runs).
RUNS = "section[aria-labelledby='runs'] table"


def api(base, path, **params):
    query = urllib.parse.urlencode(params, doseq=True)
    with urllib.request.urlopen(f"{base}{path}?{query}") as r:
        return json.load(r)


def query_of(url):
    return urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query, keep_blank_values=True)


def test_home_page(watched, base):
    page = watched.page
    page.goto(base + "/")
    assert page.title() == "ML.ENERGY benchmark data · mlenergy-server"
    counts = api(base, "/")["runs"]
    cells = page.locator("table tbody tr td.num").all_inner_texts()
    assert str(counts["llm"]) in cells and str(counts["diffusion"]) in cells
    page.get_by_role("link", name="Explore the LLM runs").click()
    page.wait_for_url(f"{base}/explore/llm")
    page.go_back()
    watched.shot("home")


def test_a_filter_change_updates_the_url_and_the_table(watched, base):
    page = watched.page
    page.goto(base + "/explore/llm")
    total = api(base, "/v1/llm/runs", limit=1)["total"]
    assert page.locator("#summary strong").inner_text() == str(total)
    assert page.locator(RUNS + " tbody tr").count() == 50

    with page.expect_navigation():
        page.select_option("#f-task", "gpqa")
    # The URL holds what was chosen and nothing empty.
    assert query_of(page.url) == [("task", "gpqa"), ("stability", "stable"), ("limit", "50")]
    with page.expect_navigation():
        page.select_option("#f-gpu_model", "B200")
    assert ("gpu_model", "B200") in query_of(page.url)
    answer = api(base, "/v1/llm/runs", task="gpqa", gpu_model="B200", limit=50)
    assert page.locator("#summary strong").inner_text() == str(answer["total"])
    ids = page.locator(RUNS + " tbody th a").all_inner_texts()
    assert ids == [r["run_id"] for r in answer["runs"]]

    # A column's name sorts by it, again the other way.
    with page.expect_navigation():
        page.locator(RUNS + " thead a", has_text="energy_per_token_joules").click()
    with page.expect_navigation():
        page.locator(RUNS + " thead a", has_text="energy_per_token_joules").click()
    assert ("sort", "-energy_per_token_joules") in query_of(page.url)
    top = api(base, "/v1/llm/runs", task="gpqa", gpu_model="B200", sort="-energy_per_token_joules", limit=1)
    assert page.locator(RUNS + " tbody th a").first.inner_text() == top["runs"][0]["run_id"]

    # A facet's link adds its value to the filter.
    with page.expect_navigation():
        page.locator(".facets a", has_text="image-chat").click()
    assert ("task", "gpqa,image-chat") in query_of(page.url)

    # The Pareto chart loaded; the copy buttons are shown (the script ran).
    pareto = page.locator("img[src*='pareto.svg']")
    assert pareto.evaluate("img => img.complete && img.naturalWidth") == 800
    assert page.locator("button.copy").first.is_visible()
    watched.shot("explorer")


def test_a_run_page_draws_its_raw_data(watched, base):
    page = watched.page
    runs = api(base, "/v1/llm/runs", stability="all", fields="run_id,results_path", limit=1000)["runs"]
    run_id = next(r["run_id"] for r in runs if r["results_path"])
    page.goto(f"{base}/explore/llm/runs/{urllib.parse.quote(run_id, safe='')}")
    assert page.locator("h1").inner_text() == run_id
    charts = page.locator("figure.raw img")
    assert charts.count() == 3
    for i in range(3):
        img = charts.nth(i)
        img.evaluate("img => img.complete || new Promise(ok => img.addEventListener('load', ok))")
        assert img.evaluate("img => img.naturalWidth") == 800
    # The wait is shown until the chart is there, then cleared.
    page.wait_for_function("[...document.querySelectorAll('figure.raw .wait')].every(w => w.textContent === '')")
    watched.shot("run")


def test_dark_mode_follows_the_system(browser, base):
    context = browser.new_context(color_scheme="dark")
    page = context.new_page()
    page.goto(base + "/explore/diffusion")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(18, 18, 18)", background
    context.close()
