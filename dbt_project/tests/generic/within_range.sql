{% test within_range(model, column_name, min_value=none, max_value=none) %}
-- non-null values of `column_name` below `min_value` or above `max_value` (either bound optional, inclusive)
select * from {{ model }}
where {{ column_name }} is not null and (
    false
    {% if min_value is not none %} or {{ column_name }} < {{ min_value }} {% endif %}
    {% if max_value is not none %} or {{ column_name }} > {{ max_value }} {% endif %}
)
{% endtest %}
